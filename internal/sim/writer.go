package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	kwokv1 "github.com/berth-dev/berth/api/kwok/v1alpha1"
	"github.com/berth-dev/berth/internal/sim/stage"
)

// FieldManager names the simulator's server-side applies.
const FieldManager = "berth-sim"

// writer makes the simulator's writes, as the simulator or, for patches
// that ask for it, as the user a stage names.
type writer struct {
	base   *rest.Config
	client kubernetes.Interface
	dyn    dynamic.Interface
	others *kinds
	mu     sync.Mutex
	as     map[string]kubernetes.Interface
	dynAs  map[string]dynamic.Interface
}

func newWriter(base *rest.Config, client kubernetes.Interface, dyn dynamic.Interface, others *kinds) *writer {
	return &writer{base: base, client: client, dyn: dyn, others: others,
		as: map[string]kubernetes.Interface{}, dynAs: map[string]dynamic.Interface{}}
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
	c, err := kubernetes.NewForConfig(w.impersonating(user))
	if err != nil {
		return nil, err
	}
	w.as[user] = c
	return c, nil
}

func (w *writer) dynFor(user string) (dynamic.Interface, error) {
	if user == "" {
		return w.dyn, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if c, ok := w.dynAs[user]; ok {
		return c, nil
	}
	c, err := dynamic.NewForConfig(w.impersonating(user))
	if err != nil {
		return nil, err
	}
	w.dynAs[user] = c
	return c, nil
}

func (w *writer) impersonating(user string) *rest.Config {
	cfg := rest.CopyConfig(w.base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

var patchTypes = map[kwokv1.StagePatchType]types.PatchType{
	kwokv1.StagePatchTypeJSONPatch:           types.JSONPatchType,
	kwokv1.StagePatchTypeMergePatch:          types.MergePatchType,
	kwokv1.StagePatchTypeStrategicMergePatch: types.StrategicMergePatchType,
}

// resource is the dynamic client of a watched other kind, in ns.
func (w *writer) resource(c dynamic.Interface, kind, ns string) (dynamic.ResourceInterface, error) {
	o, ok := w.others.get(kind)
	if !ok {
		return nil, fmt.Errorf("kind %s is not simulated", kind)
	}
	if o.namespaced {
		return c.Resource(o.resource).Namespace(ns), nil
	}
	return c.Resource(o.resource), nil
}

func (w *writer) patch(ctx context.Context, kind, ns, name string, pt kwokv1.StagePatchType, data []byte, subresource, as string) (runtime.Object, error) {
	var sub []string
	if subresource != "" {
		sub = []string{subresource}
	}
	if !builtIn(kind) {
		c, err := w.dynFor(as)
		if err != nil {
			return nil, err
		}
		r, err := w.resource(c, kind, ns)
		if err != nil {
			return nil, err
		}
		return r.Patch(ctx, name, patchTypes[pt], data, metav1.PatchOptions{}, sub...)
	}
	c, err := w.clientFor(as)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "Node":
		return c.CoreV1().Nodes().Patch(ctx, name, patchTypes[pt], data, metav1.PatchOptions{}, sub...)
	default:
		return c.CoreV1().Pods(ns).Patch(ctx, name, patchTypes[pt], data, metav1.PatchOptions{}, sub...)
	}
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
	r, err := w.resource(w.dyn, kind, ns)
	if err != nil {
		return err
	}
	return r.Delete(ctx, name, opts)
}

// apply writes a stage's rendered object: applied server-side by default
// (made if it does not exist), else patched as its type says. A namespaced
// object without a namespace goes in ns, the stage's object's. A patch of
// an object that is gone has nothing to do.
func (w *writer) apply(ctx context.Context, a *stage.Applied, ns string) error {
	u := &unstructured.Unstructured{Object: a.Object}
	gvk := schema.FromAPIVersionAndKind(u.GetAPIVersion(), u.GetKind())
	m, err := w.others.mapping(gvk)
	if err != nil {
		return permanentError{fmt.Errorf("apply: %w", err)}
	}
	c, err := w.dynFor(a.As)
	if err != nil {
		return err
	}
	var r dynamic.ResourceInterface = c.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if u.GetNamespace() == "" {
			u.SetNamespace(ns)
		}
		r = c.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return permanentError{err}
	}
	var sub []string
	if a.Subresource != "" {
		sub = []string{a.Subresource}
	}
	if a.Type == "" {
		force := true
		_, err = r.Patch(ctx, u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force}, sub...)
		if apierrors.IsNotFound(err) {
			// No such namespace, or a subresource of nothing: it would fail
			// the same way again.
			return permanentError{fmt.Errorf("applying %s %s: %w", gvk.Kind, u.GetName(), err)}
		}
		return err
	}
	_, err = r.Patch(ctx, u.GetName(), patchTypes[a.Type], data, metav1.PatchOptions{}, sub...)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
