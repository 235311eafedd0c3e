package sim

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	kwokv1 "github.com/berth-dev/berth/api/kwok/v1alpha1"
)

// writer makes the simulator's writes, as the simulator or, for patches
// that ask for it, as the user a stage names.
type writer struct {
	base   *rest.Config
	client kubernetes.Interface
	mu     sync.Mutex
	as     map[string]kubernetes.Interface
}

func newWriter(base *rest.Config, client kubernetes.Interface) *writer {
	return &writer{base: base, client: client, as: map[string]kubernetes.Interface{}}
}

func (w *writer) clientFor(user string) (kubernetes.Interface, error) {
	if user == "" {
		return w.client, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.as[user]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(w.base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	w.as[user] = c
	return c, nil
}

var patchTypes = map[kwokv1.StagePatchType]types.PatchType{
	kwokv1.StagePatchTypeJSONPatch:           types.JSONPatchType,
	kwokv1.StagePatchTypeMergePatch:          types.MergePatchType,
	kwokv1.StagePatchTypeStrategicMergePatch: types.StrategicMergePatchType,
}

func (w *writer) patch(ctx context.Context, kind, ns, name string, pt kwokv1.StagePatchType, data []byte, subresource, as string) (runtime.Object, error) {
	c, err := w.clientFor(as)
	if err != nil {
		return nil, err
	}
	var sub []string
	if subresource != "" {
		sub = []string{subresource}
	}
	switch kind {
	case "Node":
		return c.CoreV1().Nodes().Patch(ctx, name, patchTypes[pt], data, metav1.PatchOptions{}, sub...)
	case "Pod":
		return c.CoreV1().Pods(ns).Patch(ctx, name, patchTypes[pt], data, metav1.PatchOptions{}, sub...)
	}
	return nil, fmt.Errorf("kind %s is not simulated", kind)
}

// delete deletes the object at once (as a kubelet confirms a pod's
// containers are gone), only if it is still the same object.
func (w *writer) delete(ctx context.Context, kind, ns, name string, uid types.UID) error {
	zero := int64(0)
	opts := metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}}
	switch kind {
	case "Node":
		return w.client.CoreV1().Nodes().Delete(ctx, name, opts)
	case "Pod":
		return w.client.CoreV1().Pods(ns).Delete(ctx, name, opts)
	}
	return fmt.Errorf("kind %s is not simulated", kind)
}
