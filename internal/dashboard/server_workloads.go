package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller/queues"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/why"
)

func (s *Server) workloads(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cq, state := q.Get("clusterQueue"), q.Get("state")
	if cq == "" {
		http.Error(w, "query parameter clusterQueue: required", http.StatusBadRequest)
		return
	}
	num := func(name string, def int) (int, bool) {
		v := q.Get(name)
		if v == "" {
			return def, true
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			http.Error(w, fmt.Sprintf("query parameter %s=%q: not a whole number", name, v), http.StatusBadRequest)
			return 0, false
		}
		return n, true
	}
	offset, ok := num("offset", 0)
	if !ok {
		return
	}
	limit, ok := num("limit", 100)
	if !ok {
		return
	}
	var lqs berthv1.LocalQueueList
	if err := s.cache.List(r.Context(), &lqs); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	// Only this queue's workloads are read (queueIndex): a page costs
	// what the queue holds, not what the cluster does.
	keys := []string{Admitted + "/" + cq}
	byName := make(map[string]string, len(lqs.Items))
	for _, lq := range lqs.Items {
		byName[lq.Namespace+"/"+lq.Name] = lq.Spec.ClusterQueue
		if lq.Spec.ClusterQueue == cq && state == Pending {
			keys = append(keys, Pending+"/"+lq.Namespace+"/"+lq.Name)
		}
	}
	var list []*berthv1.Workload
	for _, key := range keys {
		var wls berthv1.WorkloadList
		if err := s.cache.List(r.Context(), &wls, client.MatchingFields{queueIndex: key}, client.UnsafeDisableDeepCopy); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		for i := range wls.Items {
			list = append(list, &wls.Items[i])
		}
	}
	var aging *core.Aging
	var scores map[string]float64
	var cqObj berthv1.ClusterQueue
	if err := s.cache.Get(r.Context(), types.NamespacedName{Name: cq}, &cqObj); err == nil {
		c := queues.ClusterQueueOf(&cqObj)
		aging = c.Aging
		if c.AdmissionFairSharing {
			scores = map[string]float64{}
			for i := range lqs.Items {
				scores[lqs.Items[i].Namespace+"/"+lqs.Items[i].Name] = queues.ScoreOf(&lqs.Items[i])
			}
		}
	}
	page, err := Workloads(list, byName, cq, q.Get("localQueue"), state, offset, limit, aging, scores, time.Now())
	if err != nil {
		http.Error(w, "query: "+err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, page)
}

// relatedTTL is how long a workload's pods and events, read from the API
// server, and `berth why` for it, which reads every queue and workload of
// the watch, serve every page showing it: pages ask again on every change
// in the cluster, the API server is asked at most this often.
const relatedTTL = 2 * time.Second

type relatedRead struct {
	at     time.Time
	pods   []corev1.Pod
	events []corev1.Event
	why    string
	err    error
}

func (s *Server) workload(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key := types.NamespacedName{Namespace: q.Get("namespace"), Name: q.Get("name")}
	for param, v := range map[string]string{"namespace": key.Namespace, "name": key.Name} {
		if v == "" {
			http.Error(w, "query parameter "+param+": required", http.StatusBadRequest)
			return
		}
	}
	wl := &berthv1.Workload{}
	if err := s.cache.Get(r.Context(), key, wl); err != nil {
		code := http.StatusServiceUnavailable
		if apierrors.IsNotFound(err) {
			code = http.StatusNotFound
		}
		http.Error(w, fmt.Sprintf("Workload %s: %v", key, err), code)
		return
	}
	rel := s.relatedOf(r.Context(), wl)
	d := Describe(wl, rel.pods, rel.events, rel.why)
	if rel.err != nil {
		// The page still says what the watch knows; the rest is named.
		d.Why += "\n(not all of it could be read: " + rel.err.Error() + ")"
	}
	writeJSON(w, d)
}

// relatedOf reads wl's pods, its and its owner's events and works out
// `berth why` for it, or gives the last read if it is recent.
func (s *Server) relatedOf(ctx context.Context, wl *berthv1.Workload) relatedRead {
	key := types.NamespacedName{Namespace: wl.Namespace, Name: wl.Name}
	s.relatedMu.Lock()
	defer s.relatedMu.Unlock()
	now := time.Now()
	if last, ok := s.related[key]; ok && now.Sub(last.at) < relatedTTL {
		return last
	}
	for k, v := range s.related { // pages move on; forget what they left
		if now.Sub(v.at) >= relatedTTL {
			delete(s.related, k)
		}
	}
	read := relatedRead{at: now}
	in, err := why.Read(ctx, s.cache)
	if err != nil {
		read.err = err
	} else {
		in.Workload = wl
		read.why = why.Render(why.Explain(in))
	}
	var pods corev1.PodList
	if err := s.api.List(ctx, &pods, client.InNamespace(wl.Namespace), client.MatchingLabelsSelector{Selector: PodSelector(wl)}); err != nil {
		read.err = fmt.Errorf("listing pods: %w", err)
	}
	read.pods = pods.Items
	names := []string{wl.Name}
	if o := metav1.GetControllerOf(wl); o != nil {
		names = append(names, o.Name)
	}
	for _, name := range names {
		var evs corev1.EventList
		if err := s.api.List(ctx, &evs, client.InNamespace(wl.Namespace), client.MatchingFields{"involvedObject.name": name}); err != nil {
			read.err = fmt.Errorf("listing events: %w", err)
			continue
		}
		read.events = append(read.events, evs.Items...)
	}
	// Fresh from when it was done: at scale `berth why` alone takes
	// seconds, and a read stamped when it began would be stale on arrival.
	read.at = time.Now()
	s.related[key] = read
	return read
}
