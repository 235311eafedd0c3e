package multicluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/admissioncheck"
	"github.com/berth-dev/berth/internal/multicluster"
	"github.com/berth-dev/berth/internal/workload"
)

// Dispatcher follows the manager's Workloads that wait for, or passed, a
// multicluster check: its requests name a manager Workload.
type Dispatcher struct {
	client      client.Client
	rec         events.EventRecorder
	clock       clock.PassiveClock
	workers     *Workers
	origin      string
	lostTimeout time.Duration
	spreadAfter time.Duration
	// firstCopies remembers when each waiting workload's first copy was
	// made (multicluster.Plan.FirstCopy). Forgotten on a restart, which
	// only makes the copies spread at once.
	mu          sync.Mutex
	firstCopies map[types.NamespacedName]firstCopy
	// lastWorker is, per check, the worker the last workload dispatched
	// through it went to (multicluster.Input.Preferred). Forgotten on a
	// restart, which only makes the config's order apply again.
	lastWorker map[string]string
	// started is when this controller started: a worker not looked at
	// since is taken as lost since then, not for ever.
	started time.Time
}

// Reconcile reads the workload, its Job or JobSet and its copies, and
// carries out what multicluster.Decide says.
func (d *Dispatcher) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var wl berthv1.Workload
	if err := d.client.Get(ctx, req.NamespacedName, &wl); err != nil {
		if apierrors.IsNotFound(err) {
			d.rememberFirstCopy(req.NamespacedName, "", time.Time{})
			return reconcile.Result{}, d.collect(ctx, req.NamespacedName)
		}
		return reconcile.Result{}, err
	}
	if workload.IsFinished(&wl) {
		d.rememberFirstCopy(req.NamespacedName, "", time.Time{})
		// Its Job's end was copied from the worker; the copies have done
		// their work. (The cache keeps only an outline of it.)
		return reconcile.Result{}, d.collect(ctx, req.NamespacedName)
	}
	check, clusters, err := d.checkOf(ctx, &wl)
	if err != nil || check == "" {
		if err == nil {
			d.rememberFirstCopy(req.NamespacedName, "", time.Time{})
		}
		return reconcile.Result{}, err
	}
	obj, kind, refusal, err := d.objectOf(ctx, &wl)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := d.clock.Now()
	in := multicluster.Input{Workload: &wl, Check: check, Clusters: clusters, Workers: map[string]multicluster.Worker{},
		Refusal: refusal, Now: now, LostTimeout: d.lostTimeout, SpreadAfter: d.spreadAfter, FirstCopy: d.firstCopyOf(&wl),
		Preferred: d.preferred(check)}
	remotes := map[string]copies{}
	names := d.workers.names()
	// The config's workers, and the one it runs on even if the config no
	// longer names it: one not looked at yet (after a restart) is waited
	// for, not taken as gone.
	for _, c := range append(slices.Clone(clusters), wl.Status.ClusterName) {
		if c != "" && !slices.Contains(names, c) {
			names = append(names, c)
		}
	}
	for _, name := range names {
		if d.workers.wasRemoved(name) {
			continue // its copies went with it; what ran there runs nowhere now
		}
		w, remote, err := d.view(ctx, name, &wl, obj, kind, now)
		if err != nil {
			return reconcile.Result{}, err
		}
		in.Workers[name], remotes[name] = w, remote
	}
	plan := multicluster.Decide(in)
	d.rememberFirstCopy(req.NamespacedName, wl.UID, plan.FirstCopy)

	var errs []error
	for _, name := range plan.Delete {
		// While the workload holds quota here, its Job copy goes in the
		// foreground: gone then means its pods are gone (recall).
		if err := d.deleteCopies(ctx, name, remotes[name], workload.HasQuota(&wl)); err != nil {
			errs = append(errs, err)
		}
	}
	requeue := plan.RecheckAfter
	// The copies go out to all workers at once: each round trip is to
	// another API server.
	refused := make([]bool, len(plan.Create))
	createErrs := make([]error, len(plan.Create))
	var wg sync.WaitGroup
	for i, name := range plan.Create {
		wg.Add(1)
		go func() {
			defer wg.Done()
			refused[i], createErrs[i] = d.createCopy(ctx, name, &wl, now)
		}()
	}
	wg.Wait()
	for i := range plan.Create {
		if createErrs[i] != nil {
			errs = append(errs, createErrs[i])
		}
		if refused[i] {
			// Look again soon, to say so in the check's message.
			requeue = time.Second
		}
	}
	for _, w := range in.Workers {
		if w.Conflict != "" && (requeue == 0 || requeue > ConflictTTL) {
			requeue = ConflictTTL // then the copy is tried again
		}
	}
	// The worker is recorded before its Job is made there, on the version
	// of the Workload read: a Job runs on no worker the Workload does not
	// name, and an eviction written meanwhile makes this write fail rather
	// than send the Job out.
	if plan.State != nil || plan.ClusterName != "" || plan.Recalled {
		orig := wl.DeepCopy()
		if plan.State != nil {
			for i := range wl.Status.AdmissionChecks {
				if wl.Status.AdmissionChecks[i].Name == check {
					wl.Status.AdmissionChecks[i] = *plan.State
				}
			}
		}
		if plan.ClusterName != "" {
			wl.Status.ClusterName = plan.ClusterName
		}
		if plan.Recalled {
			wl.Status.ClusterName = ""
		}
		admitted, err := d.admitWithCheck(ctx, &wl)
		if err != nil {
			return reconcile.Result{}, err
		}
		if err := d.client.Status().Patch(ctx, &wl, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		switch {
		case admitted:
			d.rec.Eventf(&wl, nil, corev1.EventTypeNormal, "Admitted", "Dispatch",
				"every admission check is Ready; runs on worker cluster %s", wl.Status.ClusterName)
		case plan.ClusterName != "":
			d.rec.Eventf(&wl, nil, corev1.EventTypeNormal, "Dispatched", "Dispatch", "runs on worker cluster %s", plan.ClusterName)
		}
		if plan.ClusterName != "" {
			d.setPreferred(check, plan.ClusterName)
		}
	}
	if plan.CreateJob != "" && obj != nil {
		if err := d.createObject(ctx, plan.CreateJob, &wl, obj, kind, now); err != nil {
			errs = append(errs, err)
		}
	}
	if obj != nil && refusal == "" {
		var remote client.Object
		if plan.CopyStatusFrom != "" {
			remote = remotes[plan.CopyStatusFrom].object
		}
		if err := d.syncStatus(ctx, &wl, obj, kind, remote); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return reconcile.Result{}, fmt.Errorf("Workload %s: %v", req.NamespacedName, errs)
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

type firstCopy struct {
	uid types.UID
	at  time.Time
}

// firstCopyOf is when the workload's first copy was made, zero if not known.
func (d *Dispatcher) firstCopyOf(wl *berthv1.Workload) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, ok := d.firstCopies[client.ObjectKeyFromObject(wl)]; ok && f.uid == wl.UID {
		return f.at
	}
	return time.Time{}
}

// rememberFirstCopy records a plan's FirstCopy; zero forgets it.
func (d *Dispatcher) rememberFirstCopy(key types.NamespacedName, uid types.UID, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if at.IsZero() {
		delete(d.firstCopies, key)
		return
	}
	d.firstCopies[key] = firstCopy{uid: uid, at: at}
}

// preferred is the worker the last workload dispatched through check went
// to, "" if none yet.
func (d *Dispatcher) preferred(check string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastWorker[check]
}

func (d *Dispatcher) setPreferred(check, worker string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lastWorker[check] = worker
}

// admitWithCheck admits the workload in the same write as its check's
// Ready when that was the last check it waited for, as the admission
// checks controller would right after: one status write and one event per
// dispatch instead of two of each. It reports whether it did.
func (d *Dispatcher) admitWithCheck(ctx context.Context, wl *berthv1.Workload) (bool, error) {
	if wl.Status.Admission == nil {
		return false, nil
	}
	var cq berthv1.ClusterQueue
	if err := d.client.Get(ctx, types.NamespacedName{Name: wl.Status.Admission.ClusterQueue}, &cq); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	dec := admissioncheck.Decide(wl, cq.Spec.AdmissionChecks)
	if dec.Action != admissioncheck.Admit {
		return false, nil
	}
	admissioncheck.Apply(wl, dec, cq.Spec.AdmissionChecks, d.clock.Now())
	return true, nil
}

// checkOf names the workload's multicluster check and its config's workers.
func (d *Dispatcher) checkOf(ctx context.Context, wl *berthv1.Workload) (check string, clusters []string, err error) {
	for _, s := range wl.Status.AdmissionChecks {
		var ac berthv1.AdmissionCheck
		if err := d.client.Get(ctx, types.NamespacedName{Name: s.Name}, &ac); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return "", nil, err
		}
		if ac.Spec.ControllerName != berthv1.MultiClusterControllerName {
			continue
		}
		name, err := multicluster.ConfigOf(&ac)
		if err != nil {
			return ac.Name, nil, nil // the check is inactive; its workloads go nowhere
		}
		var cfg berthv1.MultiClusterConfig
		if err := d.client.Get(ctx, types.NamespacedName{Name: name}, &cfg); err != nil {
			return ac.Name, nil, client.IgnoreNotFound(err)
		}
		return ac.Name, cfg.Spec.Clusters, nil
	}
	return "", nil, nil
}

// objectOf reads the manager's Job or JobSet of the workload, and its
// kind, or says why the workload cannot be dispatched.
func (d *Dispatcher) objectOf(ctx context.Context, wl *berthv1.Workload) (client.Object, *dispatchedKind, string, error) {
	for _, ref := range wl.OwnerReferences {
		kind := kindOf(ref)
		if kind == nil {
			continue
		}
		obj := kind.newObj()
		if err := d.client.Get(ctx, types.NamespacedName{Namespace: wl.Namespace, Name: ref.Name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, kind, "", nil // going away with its Workload
			}
			return nil, kind, "", err
		}
		if m := kind.managedBy(obj); m == nil || *m != multicluster.ManagedBy {
			return obj, kind, fmt.Sprintf("%s %s does not have spec.managedBy %s, so this cluster's %s controller would run it here; "+
				"berth sets it on %ss created while their queue has this check: create the %s again",
				kind.gvk.Kind, ref.Name, multicluster.ManagedBy, kind.gvk.Kind, kind.gvk.Kind, kind.gvk.Kind), nil
		}
		return obj, kind, "", nil
	}
	return nil, nil, "only Jobs and JobSets are dispatched to worker clusters", nil
}

// copies are what a worker holds of a workload: the copy of its Workload,
// and of its Job or JobSet.
type copies struct {
	workload *berthv1.Workload
	object   client.Object
}

// view says what a worker holds of the workload, and returns it. obj is
// the manager's Job or JobSet, nil when it is gone (kind too, when the
// workload has none).
func (d *Dispatcher) view(ctx context.Context, name string, wl *berthv1.Workload, obj client.Object, kind *dispatchedKind,
	now time.Time) (multicluster.Worker, copies, error) {
	wk, known := d.workers.get(name)
	if !known {
		// Not looked at since this controller started: lost, at worst,
		// since then.
		wk.since = d.started
	}
	conn := wk.conn
	w := multicluster.Worker{Active: wk.active && conn != nil, Since: wk.since, Leaving: wk.leaving}
	var out copies
	if !w.Active {
		return w, out, nil
	}
	w.Conflict = conn.conflict(types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}, now)
	if kind == &jobSetKind && !conn.jobSets && w.Conflict == "" {
		w.Conflict = "it does not serve JobSets (install the JobSet CRD and controller there)"
	}
	var rwl berthv1.Workload
	if err := conn.client.Get(ctx, client.ObjectKeyFromObject(wl), &rwl); err == nil {
		if multicluster.IsCopy(&rwl, d.origin, wl.Name) {
			w.Copied, w.Admitted, out.workload = true, workload.IsAdmitted(&rwl), &rwl
			if c := meta.FindStatusCondition(rwl.Status.Conditions, berthv1.WorkloadQuotaReserved); c != nil && c.Status == metav1.ConditionTrue {
				w.ReservedAt = c.LastTransitionTime.Time
			}
		}
	} else if !apierrors.IsNotFound(err) {
		return w, out, err
	}
	if obj == nil || (kind == &jobSetKind && !conn.jobSets) {
		// The manager's object is gone or is of no kind dispatched: find a
		// copy by its labels.
		c, err := d.objectCopy(ctx, conn, client.ObjectKeyFromObject(wl))
		w.Job, out.object = c != nil, c
		return w, out, err
	}
	remote := kind.newObj()
	if err := conn.client.Get(ctx, client.ObjectKeyFromObject(obj), remote); err == nil {
		if multicluster.IsCopy(remote, d.origin, wl.Name) {
			w.Job, out.object = true, remote
		} else if w.Conflict == "" {
			// A copy of an earlier object of the same name; it goes when
			// that one's Workload is looked at. Until then there is no room
			// here.
			w.Conflict = fmt.Sprintf("an earlier copy of %s %s is still there", kind.gvk.Kind, obj.GetName())
		}
	} else if !apierrors.IsNotFound(err) {
		return w, out, err
	}
	return w, out, nil
}

// objectCopy finds the copy of the Job or JobSet made on a worker for the
// manager Workload key, or nil.
func (d *Dispatcher) objectCopy(ctx context.Context, conn *connection, key types.NamespacedName) (client.Object, error) {
	for _, kind := range dispatchedKinds {
		if kind == &jobSetKind && !conn.jobSets {
			continue
		}
		list := kind.newList()
		if err := conn.client.List(ctx, list, client.InNamespace(key.Namespace),
			client.MatchingLabels{berthv1.PrebuiltWorkloadLabel: key.Name, multicluster.OriginLabel: d.origin}); err != nil {
			return nil, err
		}
		for _, o := range kind.items(list) {
			if multicluster.IsCopy(o, d.origin, key.Name) {
				return o, nil
			}
		}
	}
	return nil, nil
}

// createCopy copies the Workload to a worker. It reports whether the
// worker refused the copy for a reason that lasts (no such namespace,
// another Workload of that name), which is remembered for a while.
func (d *Dispatcher) createCopy(ctx context.Context, name string, wl *berthv1.Workload, now time.Time) (bool, error) {
	wk, _ := d.workers.get(name)
	conn := wk.conn
	if conn == nil {
		return false, nil
	}
	remote := multicluster.RemoteWorkload(wl, d.origin)
	key := client.ObjectKeyFromObject(remote)
	err := conn.client.Create(ctx, remote)
	switch {
	case err == nil:
		return false, nil
	case apierrors.IsNotFound(err):
		conn.setConflict(key, fmt.Sprintf("namespace %s does not exist there", wl.Namespace), now)
		return true, nil
	case !apierrors.IsAlreadyExists(err):
		return false, fmt.Errorf("copying Workload %s to worker cluster %s: %w", wl.Name, name, err)
	}
	if err := conn.direct.Get(ctx, key, remote); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if !multicluster.IsCopy(remote, d.origin, wl.Name) {
		conn.setConflict(key, fmt.Sprintf("a Workload %s/%s is there already", wl.Namespace, wl.Name), now)
		return true, nil
	}
	return false, nil
}

// createObject makes the workload's Job or JobSet on the worker whose
// copy won.
func (d *Dispatcher) createObject(ctx context.Context, name string, wl *berthv1.Workload, obj client.Object, kind *dispatchedKind,
	now time.Time) error {
	wk, _ := d.workers.get(name)
	conn := wk.conn
	if conn == nil {
		return nil
	}
	remote := kind.remote(obj, d.origin, wl.Name)
	err := conn.client.Create(ctx, remote)
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("making %s %s on worker cluster %s: %w", kind.gvk.Kind, obj.GetName(), name, err)
	}
	if err := conn.direct.Get(ctx, client.ObjectKeyFromObject(remote), remote); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !multicluster.IsCopy(remote, d.origin, wl.Name) {
		conn.setConflict(client.ObjectKeyFromObject(wl), fmt.Sprintf("a %s %s/%s is there already", kind.gvk.Kind, obj.GetNamespace(), obj.GetName()), now)
	}
	return nil
}

// deleteCopies deletes a worker's copies of a workload. With foreground,
// its Job stays until its pods are gone, which costs the garbage
// collector's writes: only a workload that holds quota waits for that.
func (d *Dispatcher) deleteCopies(ctx context.Context, name string, c copies, foreground bool) error {
	wk, _ := d.workers.get(name)
	conn := wk.conn
	if conn == nil {
		return nil // unreachable: its copies are collected once it is back
	}
	propagation := metav1.DeletePropagationBackground
	if foreground {
		propagation = metav1.DeletePropagationForeground
	}
	var objs []client.Object // the Job (or JobSet) first: its pods stop before its Workload goes
	if c.object != nil {
		objs = append(objs, c.object)
	}
	// A Workload copy its Job copy owns (the worker's berth adopts it)
	// goes with the Job: deleting it too was a second, refused write.
	if c.workload != nil && (c.object == nil || !metav1.IsControlledBy(c.workload, c.object)) {
		objs = append(objs, c.workload)
	}
	for _, obj := range objs {
		if obj.GetDeletionTimestamp() != nil {
			continue // on its way
		}
		p := propagation
		if _, isWorkload := obj.(*berthv1.Workload); isWorkload {
			p = metav1.DeletePropagationBackground // a Workload copy owns nothing there
		}
		uid := obj.GetUID()
		err := conn.client.Delete(ctx, obj, client.PropagationPolicy(p), client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting the copy %s/%s on worker cluster %s: %w", obj.GetNamespace(), obj.GetName(), name, err)
		}
	}
	return nil
}

// syncStatus gives the manager's Job or JobSet the status it should have
// (dispatchedKind.status): its copy's while it runs there.
func (d *Dispatcher) syncStatus(ctx context.Context, wl *berthv1.Workload, obj client.Object, kind *dispatchedKind, remote client.Object) error {
	orig := obj.DeepCopyObject().(client.Object)
	if !kind.status(wl, obj, remote) {
		return nil
	}
	if err := d.client.Status().Patch(ctx, obj, client.MergeFrom(orig)); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}

// collect deletes the copies of a manager Workload that is gone or finished.
func (d *Dispatcher) collect(ctx context.Context, key types.NamespacedName) error {
	for _, name := range d.workers.names() {
		wk, _ := d.workers.get(name)
		conn := wk.conn
		if conn == nil {
			continue
		}
		var c copies
		var wl berthv1.Workload
		if err := conn.client.Get(ctx, key, &wl); err == nil && multicluster.IsCopy(&wl, d.origin, key.Name) {
			c.workload = &wl
		}
		obj, err := d.objectCopy(ctx, conn, key)
		if err != nil {
			return err
		}
		c.object = obj
		if err := d.deleteCopies(ctx, name, c, false); err != nil {
			return err
		}
	}
	return nil
}
