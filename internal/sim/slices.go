package sim

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"

	"github.com/berth-dev/berth/internal/sim/devices"
)

// slicer publishes each simulated node's devices (package devices) as
// ResourceSlices, when the node is first seen and when its devices
// annotation changes; a node's slices go with it (owner reference).
type slicer struct {
	client   kubernetes.Interface
	nodes    cache.Store
	recorder events.EventRecorder
	log      logr.Logger
	queue    workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	applied map[string]string // node name: uid and annotation published
}

func newSlicer(client kubernetes.Interface, nodes cache.Store, rec events.EventRecorder, log logr.Logger) *slicer {
	return &slicer{client: client, nodes: nodes, recorder: rec, log: log, applied: map[string]string{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, time.Minute),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "berth-sim-slices"})}
}

// offer queues a node whose devices may differ from those published.
func (s *slicer) offer(n *corev1.Node) {
	want := string(n.UID) + "/" + n.Annotations[devices.Annotation]
	s.mu.Lock()
	done := s.applied[n.Name] == want
	s.mu.Unlock()
	if !done && (n.Annotations[devices.Annotation] != "" || s.seen(n.Name)) {
		s.queue.Add(n.Name)
	}
}

func (s *slicer) seen(node string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.applied[node]
	return ok
}

func (s *slicer) forget(node string) {
	s.mu.Lock()
	delete(s.applied, node)
	s.mu.Unlock()
}

func (s *slicer) run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	for {
		name, stop := s.queue.Get()
		if stop {
			return
		}
		if err := s.publish(ctx, name); err != nil {
			s.log.Error(err, "publishing a node's ResourceSlices", "node", name)
			s.queue.AddRateLimited(name)
		} else {
			s.queue.Forget(name)
		}
		s.queue.Done(name)
	}
}

// publish makes the node's ResourceSlices those its annotation describes:
// each created or updated (a new pool generation when its devices change),
// and those of drivers it no longer has deleted.
func (s *slicer) publish(ctx context.Context, name string) error {
	obj, ok, _ := s.nodes.GetByKey(name)
	if !ok {
		return nil // its slices go with it
	}
	n := obj.(*corev1.Node)
	applied := string(n.UID) + "/" + n.Annotations[devices.Annotation]
	want, err := devices.Slices(n)
	if err != nil {
		// Fixed only by a new annotation, which queues it again.
		s.recorder.Eventf(n, nil, corev1.EventTypeWarning, "BadDevices", "Publish", "node %s: %v", n.Name, err)
		s.mark(name, applied)
		return nil
	}
	list, err := s.client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{LabelSelector: devices.NodeLabel + "=" + devices.LabelOf(n.Name)})
	if err != nil {
		return err
	}
	have := map[string]*resourcev1.ResourceSlice{}
	for i := range list.Items {
		have[list.Items[i].Name] = &list.Items[i]
	}
	for _, w := range want {
		old, ok := have[w.Name]
		delete(have, w.Name)
		switch {
		case !ok:
			if _, err := s.client.ResourceV1().ResourceSlices().Create(ctx, w, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		case !equality.Semantic.DeepEqual(old.Spec.Devices, w.Spec.Devices) || !equality.Semantic.DeepEqual(old.OwnerReferences, w.OwnerReferences):
			w.ResourceVersion = old.ResourceVersion
			w.Spec.Pool.Generation = old.Spec.Pool.Generation + 1
			if _, err := s.client.ResourceV1().ResourceSlices().Update(ctx, w, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
	}
	for _, gone := range have {
		if err := s.client.ResourceV1().ResourceSlices().Delete(ctx, gone.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	s.mark(name, applied)
	return nil
}

func (s *slicer) mark(node, applied string) {
	s.mu.Lock()
	s.applied[node] = applied
	s.mu.Unlock()
}
