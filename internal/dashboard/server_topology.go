package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// TopologyFlavor is a flavor whose nodes are arranged in a Topology.
type TopologyFlavor struct {
	Flavor   string `json:"flavor"`
	Topology string `json:"topology"`
}

func (s *Server) topologies(w http.ResponseWriter, r *http.Request) {
	var rfs berthv1.ResourceFlavorList
	if err := s.cache.List(r.Context(), &rfs); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	out := []TopologyFlavor{}
	for _, rf := range rfs.Items {
		if rf.Spec.TopologyName != nil {
			out = append(out, TopologyFlavor{Flavor: rf.Name, Topology: *rf.Spec.TopologyName})
		}
	}
	slices.SortFunc(out, func(a, b TopologyFlavor) int { return strings.Compare(a.Flavor, b.Flavor) })
	writeJSON(w, out)
}

// drawnTopology is a flavor's TopologyView, drawn for every page that asks
// within relatedTTL: its nodes and their pods are read from the API server,
// not watched.
type drawnTopology struct {
	at   time.Time
	view TopologyView
	code int
	err  error
}

func (s *Server) topology(w http.ResponseWriter, r *http.Request) {
	flavor := r.URL.Query().Get("flavor")
	if flavor == "" {
		http.Error(w, "query parameter flavor: required", http.StatusBadRequest)
		return
	}
	d := s.drawTopology(r.Context(), flavor)
	if d.err != nil {
		http.Error(w, d.err.Error(), d.code)
		return
	}
	writeJSON(w, d.view)
}

// boundPods are the pods that take room on their nodes: bound, not ended.
var boundPods = fields.ParseSelectorOrDie("spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed")

func (s *Server) drawTopology(ctx context.Context, flavor string) drawnTopology {
	s.relatedMu.Lock()
	defer s.relatedMu.Unlock()
	if last, ok := s.drawn[flavor]; ok && time.Since(last.at) < relatedTTL {
		return last
	}
	for k, v := range s.drawn {
		if time.Since(v.at) >= relatedTTL {
			delete(s.drawn, k)
		}
	}
	d := drawnTopology{code: http.StatusServiceUnavailable}
	in := TopologyInput{Flavor: &berthv1.ResourceFlavor{}, Topology: &berthv1.Topology{}}
	err := s.cache.Get(ctx, types.NamespacedName{Name: flavor}, in.Flavor)
	switch {
	case apierrors.IsNotFound(err):
		d.code, d.err = http.StatusNotFound, fmt.Errorf("ResourceFlavor %s not found", flavor)
	case err != nil:
		d.err = err
	case in.Flavor.Spec.TopologyName == nil:
		d.code, d.err = http.StatusNotFound, fmt.Errorf("ResourceFlavor %s has no topologyName", flavor)
	}
	if d.err == nil {
		if err := s.api.Get(ctx, types.NamespacedName{Name: *in.Flavor.Spec.TopologyName}, in.Topology); err != nil {
			d.err = fmt.Errorf("ResourceFlavor %s: Topology %s: %w", flavor, *in.Flavor.Spec.TopologyName, err)
			if apierrors.IsNotFound(err) {
				d.code = http.StatusNotFound
			}
		}
	}
	if d.err == nil {
		d.err = s.readTopology(ctx, &in)
	}
	if d.err == nil {
		d.view, d.err = DrawTopology(in)
		d.code = http.StatusConflict // the cluster's objects do not make a tree (a Topology without levels)
	}
	d.at = time.Now()
	s.drawn[flavor] = d
	return d
}

// readTopology reads the flavor's nodes and every bound pod (a node's room
// is taken by whichever pods are bound to it) from the API server, and the
// workloads from the watch.
func (s *Server) readTopology(ctx context.Context, in *TopologyInput) error {
	var (
		nodes corev1.NodeList
		pods  corev1.PodList
		wls   berthv1.WorkloadList
	)
	if err := s.api.List(ctx, &nodes, client.MatchingLabels(in.Flavor.Spec.NodeLabels)); err != nil {
		return fmt.Errorf("listing the nodes of ResourceFlavor %s: %w", in.Flavor.Name, err)
	}
	if err := s.api.List(ctx, &pods, client.MatchingFieldsSelector{Selector: boundPods}); err != nil {
		return fmt.Errorf("listing the pods bound to nodes: %w", err)
	}
	if err := s.cache.List(ctx, &wls, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	in.Nodes, in.Pods, in.Workloads = nodes.Items, pods.Items, wls.Items
	return nil
}
