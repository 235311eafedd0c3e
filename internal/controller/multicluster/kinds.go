package multicluster

import (
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	"github.com/berth-dev/berth/internal/multicluster"
)

// dispatchedKind is one kind of object whose workloads run on worker
// clusters: the manager's object is copied to the worker that admitted its
// Workload, and takes that copy's status.
type dispatchedKind struct {
	gvk     schema.GroupVersionKind
	newObj  func() client.Object
	newList func() client.ObjectList
	items   func(client.ObjectList) []client.Object
	// managedBy is the object's spec.managedBy, nil when it has none.
	managedBy func(client.Object) *string
	remote    func(obj client.Object, origin, workloadName string) client.Object
	// status gives the manager's object the status it should have, from
	// the worker's copy while it runs there (remote nil otherwise), and
	// reports whether it changed anything.
	status func(wl *berthv1.Workload, manager, remote client.Object) bool
}

var jobKind = dispatchedKind{
	gvk:     batchv1.SchemeGroupVersion.WithKind("Job"),
	newObj:  func() client.Object { return &batchv1.Job{} },
	newList: func() client.ObjectList { return &batchv1.JobList{} },
	items: func(l client.ObjectList) []client.Object {
		var out []client.Object
		for i := range l.(*batchv1.JobList).Items {
			out = append(out, &l.(*batchv1.JobList).Items[i])
		}
		return out
	},
	managedBy: func(o client.Object) *string { return o.(*batchv1.Job).Spec.ManagedBy },
	remote: func(o client.Object, origin, wl string) client.Object {
		return multicluster.RemoteJob(o.(*batchv1.Job), origin, wl)
	},
	// A suspended Job taken back from its worker gets its start time
	// cleared, as a Job controller would, so that berth may change its
	// template before it runs again; a running one takes its copy's status.
	status: func(wl *berthv1.Workload, m, r client.Object) bool {
		job := m.(*batchv1.Job)
		switch {
		case jobs.Suspended(job) && wl.Status.ClusterName == "":
			return multicluster.StoppedStatus(&job.Status)
		case !jobs.Suspended(job) && r != nil:
			status, changed := multicluster.JobStatus(job, r.(*batchv1.Job))
			job.Status = status
			return changed
		}
		return false
	},
}

// jobSetKind: a JobSet's status says nothing that keeps berth from
// changing its templates, so only a running one's is copied; it is copied
// whether or not the manager has let its JobSet go yet (spec.suspend),
// since a JobSet that ended on the worker ended.
var jobSetKind = dispatchedKind{
	gvk:     jobsets.GVK,
	newObj:  func() client.Object { return &jobsetv1.JobSet{} },
	newList: func() client.ObjectList { return &jobsetv1.JobSetList{} },
	items: func(l client.ObjectList) []client.Object {
		var out []client.Object
		for i := range l.(*jobsetv1.JobSetList).Items {
			out = append(out, &l.(*jobsetv1.JobSetList).Items[i])
		}
		return out
	},
	managedBy: func(o client.Object) *string { return o.(*jobsetv1.JobSet).Spec.ManagedBy },
	remote: func(o client.Object, origin, wl string) client.Object {
		return multicluster.RemoteJobSet(o.(*jobsetv1.JobSet), origin, wl)
	},
	status: func(_ *berthv1.Workload, m, r client.Object) bool {
		if r == nil {
			return false
		}
		js := m.(*jobsetv1.JobSet)
		status, changed := multicluster.JobSetStatus(js, r.(*jobsetv1.JobSet))
		js.Status = status
		return changed
	},
}

// dispatchedKinds are the kinds dispatched, in the order a worker's copies
// are looked for.
var dispatchedKinds = []*dispatchedKind{&jobKind, &jobSetKind}

// kindOf is the dispatched kind an owner reference names, or nil.
func kindOf(ref metav1.OwnerReference) *dispatchedKind {
	for _, k := range dispatchedKinds {
		if ref.Kind == k.gvk.Kind && ref.APIVersion == k.gvk.GroupVersion().String() {
			return k
		}
	}
	return nil
}
