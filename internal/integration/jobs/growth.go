package jobs

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/workload"
)

// A running Job whose parallelism is raised grows in place: the Job webhook
// keeps spec.parallelism at what is admitted and records the raise
// (berthv1.PendingParallelismAnnotation); the increase is queued as a
// growth Workload of its own, pinned to the flavors the Job's pods run in;
// once that is admitted, the Job's Workload takes over its quota, the Job's
// parallelism is raised, and the growth Workload is deleted. The Job never
// runs more pods than the quota its Workload holds: its parallelism is
// raised only after its Workload holds the increase, while the growth
// Workload still holds it too.

// GrowthStep is what a running Job's raise of parallelism calls for next.
type GrowthStep int

const (
	// GrowNothing: nothing to do (no raise, or waiting for quota).
	GrowNothing GrowthStep = iota
	// GrowCreate makes the growth Workload, From to To pods at once.
	GrowCreate
	// GrowUpdate asks the growth Workload, not admitted yet, for From to To.
	GrowUpdate
	// GrowMerge has the Job's Workload hold the quota of To pods: the
	// growth Workload's was admitted.
	GrowMerge
	// GrowRaise sets the Job's parallelism to To, once the growth Workload
	// is seen admitted still (else its quota is given up: GrowUnmerge).
	GrowRaise
	// GrowDelete deletes the growth Workload: done, or no longer wanted.
	GrowDelete
	// GrowForget removes the pending raise from the Job (Why, when set,
	// says why it is not done).
	GrowForget
)

// Slice is what the reconciler read of a Job's growth Workload.
type Slice struct {
	Name     string
	From, To int32
	// Admitted: it holds quota, in Flavors.
	Admitted bool
	Flavors  map[string]string
}

// Growth is the next step of a raise, for the pods at once From to To.
type Growth struct {
	Step     GrowthStep
	From, To int32
	Why      string
}

// PendingParallelism is the raise a Job's annotation asks for; 0 when it
// has none.
func PendingParallelism(job *batchv1.Job) (int32, error) {
	v, ok := job.Annotations[berthv1.PendingParallelismAnnotation]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("annotation %s of Job %s/%s: %q is not a positive whole number of pods",
			berthv1.PendingParallelismAnnotation, job.Namespace, job.Name, v)
	}
	return int32(n), nil
}

// atOnce is how many pods at once a Job of parallelism p runs.
func atOnce(job *batchv1.Job, p int32) int32 {
	if c := job.Spec.Completions; c != nil && *c < p {
		return *c
	}
	return p
}

// notGrowable says why a running Job cannot grow in place, "" when it can:
// one admitted with fewer pods than it asked (partial admission), placed
// by topology, or run on a worker cluster. Such a Job is queued again
// whole with its new size, as before.
func notGrowable(job *batchv1.Job, wl *berthv1.Workload) string {
	a := wl.Status.Admission
	switch {
	case a == nil || len(a.PodSetAssignments) != 1 || len(wl.Spec.PodSets) != 1:
		return "it is not admitted as one pod set"
	case wl.Status.ClusterName != "" || (job.Spec.ManagedBy != nil && *job.Spec.ManagedBy == ManagedBy):
		return "it runs on a worker cluster"
	case prebuilt(job):
		return "it runs for a Workload made elsewhere (a manager cluster's)"
	case a.PodSetAssignments[0].TopologyAssignment != nil || job.Spec.Template.Labels[berthv1.TopologyPlacedLabel] != "":
		return "it is placed by topology"
	case partial(job):
		return "it was admitted with fewer pods than it asked for (partial admission)"
	}
	return ""
}

// partial reports whether berth runs the Job with fewer pods at once than
// it asked (ShrinkToAdmitted).
func partial(job *batchv1.Job) bool {
	var orig scheduling
	if data, ok := job.Annotations[OriginalSchedulingAnnotation]; ok && json.Unmarshal([]byte(data), &orig) == nil {
		return orig.Partial > 0
	}
	return false
}

// GrowsInPlace reports whether an update raising a running Job's pods at
// once (old to job) can be admitted as an increase while its pods run:
// only its parallelism changed upwards, and it can grow (notGrowable,
// judged from the Job alone; the reconciler judges its Workload too).
func GrowsInPlace(old, job *batchv1.Job) bool {
	if Suspended(old) || !Injected(old) || old.Spec.Parallelism == nil || job.Spec.Parallelism == nil ||
		*job.Spec.Parallelism <= *old.Spec.Parallelism || !equalPtr(old.Spec.Completions, job.Spec.Completions) {
		return false
	}
	return !(job.Spec.ManagedBy != nil && *job.Spec.ManagedBy == ManagedBy) && !prebuilt(job) &&
		job.Spec.Template.Labels[berthv1.TopologyPlacedLabel] == "" && !partial(old)
}

func prebuilt(job *batchv1.Job) bool {
	_, ok := Prebuilt(job)
	return ok
}

func equalPtr(a, b *int32) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// NextGrowth decides the next step of a running Job's raise, from the Job,
// its admitted Workload and its growth Workload (nil when there is none).
// One step at a time: each is one write, and the next is decided from what
// the API then shows, so a crash between two leaves nothing half done that
// the next call does not finish or undo.
func NextGrowth(job *batchv1.Job, wl *berthv1.Workload, s *Slice) Growth {
	want, err := PendingParallelism(job)
	now := atOnce(job, ptrOr(job.Spec.Parallelism, 1))
	var admitted int32
	if a := wl.Status.Admission; a != nil && len(a.PodSetAssignments) > 0 {
		admitted = a.PodSetAssignments[0].Count
	}
	if s == nil {
		switch {
		case err != nil:
			return Growth{Step: GrowForget, Why: err.Error()}
		case want == 0:
			return Growth{}
		case now < admitted:
			// Lowered since: the raise is void.
			return Growth{Step: GrowForget}
		case atOnce(job, want) <= admitted:
			return Growth{Step: GrowForget}
		case now != admitted:
			return Growth{} // not as admitted: resized, queued again whole
		}
		if why := notGrowable(job, wl); why != "" {
			return Growth{Step: GrowForget, Why: fmt.Sprintf("Job %s cannot grow to %d pods at once while it runs (%s %s): %s; "+
				"set its parallelism while it is suspended to queue it again with that size", job.Name, atOnce(job, want),
				berthv1.PendingParallelismAnnotation, job.Annotations[berthv1.PendingParallelismAnnotation], why)}
		}
		return Growth{Step: GrowCreate, From: admitted, To: atOnce(job, want)}
	}
	g := Growth{From: s.From, To: s.To}
	switch {
	case now < s.From:
		// Lowered below where it grows from: the shrink takes over.
		g.Step = GrowDelete
	case admitted == s.From && now == s.From:
		target := atOnce(job, want)
		switch {
		case err != nil || want == 0 || target <= admitted:
			g.Step = GrowDelete // no longer asked for
		case !s.Admitted && target != s.To:
			g.Step, g.To = GrowUpdate, target
		case !s.Admitted:
			// Waiting for quota.
		case target < s.To:
			g.Step = GrowDelete // asks for less now: asked again for that
		case !maps.Equal(s.Flavors, flavorsOf(wl)):
			g.Step, g.Why = GrowForget, fmt.Sprintf("Job %s: its increase was admitted in other flavors than its pods run in", job.Name)
		default:
			g.Step = GrowMerge
		}
	case admitted == s.To && now == s.From:
		g.Step = GrowRaise
	default:
		// Done (admitted == now == To), or no longer what it was made for.
		g.Step = GrowDelete
	}
	return g
}

func ptrOr(p *int32, d int32) int32 {
	if p == nil {
		return d
	}
	return *p
}

// GrowthName is the name of the growth Workload of the Job whose Workload
// is named wl.
func GrowthName(wl string) string { return truncate(wl, 248) + "-grow" }

// NewGrowth makes the growth Workload of a running Job's Workload wl, from
// pods at once to more: its one pod set is wl's with the difference as its
// count, pinned to the flavors wl's pods run in, owned by wl (it goes with
// it), in wl's queue at wl's priority.
func NewGrowth(job *batchv1.Job, wl *berthv1.Workload, from, to int32) (*berthv1.Workload, error) {
	pinned, err := json.Marshal(flavorsOf(wl))
	if err != nil {
		return nil, err
	}
	ps := *wl.Spec.PodSets[0].DeepCopy()
	ps.Count, ps.MinCount = to-from, nil
	yes := true
	return &berthv1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: GrowthName(wl.Name), Namespace: wl.Namespace,
			Annotations: map[string]string{berthv1.GrowthOfAnnotation: job.Name, berthv1.GrowthFromAnnotation: strconv.Itoa(int(from)),
				berthv1.GrowthToAnnotation: strconv.Itoa(int(to)), berthv1.GrowthFlavorsAnnotation: string(pinned)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: berthv1.GroupVersion.String(), Kind: "Workload", Name: wl.Name, UID: wl.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: berthv1.WorkloadSpec{QueueName: wl.Spec.QueueName, Priority: wl.Spec.Priority, PriorityClassName: wl.Spec.PriorityClassName,
			PodSets: []berthv1.PodSet{ps}},
	}, nil
}

// SliceOf reads a growth Workload; false when it is not one berth made for
// a growth (its annotations say otherwise).
func SliceOf(g *berthv1.Workload) (*Slice, bool) {
	from, err1 := strconv.ParseInt(g.Annotations[berthv1.GrowthFromAnnotation], 10, 32)
	to, err2 := strconv.ParseInt(g.Annotations[berthv1.GrowthToAnnotation], 10, 32)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	s := &Slice{Name: g.Name, From: int32(from), To: int32(to)}
	if workload.IsAdmitted(g) && !workload.IsStopping(g) && len(g.Status.Admission.PodSetAssignments) == 1 {
		s.Admitted, s.Flavors = true, flavorsOf(g)
	}
	return s, true
}

// flavorsOf are the flavors of an admitted workload's one pod set, by
// resource.
func flavorsOf(wl *berthv1.Workload) map[string]string {
	out := map[string]string{}
	for r, f := range wl.Status.Admission.PodSetAssignments[0].Flavors {
		out[string(r)] = f
	}
	return out
}
