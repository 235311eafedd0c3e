// Package manifests applies berth's manifests to a cluster with server-side
// apply: the CRDs, and the RBAC and namespace the controller runs with.
package manifests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	visibilityv1 "github.com/berth-dev/berth/api/visibility/v1beta1"
	"github.com/berth-dev/berth/config"
	"github.com/berth-dev/berth/internal/guard"
)

// ControllerName names the controller's roles and bindings, and
// ControllerNamespace is its namespace on a local control plane.
const (
	ControllerName      = "berth-controller"
	ControllerNamespace = "berth-system"
)

// FieldManager owns what berth applies.
const FieldManager = "berth-install"

// CRDs applies berth's CustomResourceDefinitions and the simulator's, and
// waits until the API server serves every one of them. Without berth's
// (a cluster to install berth in, as a user's would be), only the
// simulator's.
func CRDs(ctx context.Context, cfg *rest.Config, berth bool) error {
	docs, err := config.SimCRDs()
	if berth {
		docs, err = config.CRDs()
	}
	if err != nil {
		return err
	}
	objs, err := Decode(docs...)
	if err != nil {
		return err
	}
	return ApplyEstablished(ctx, cfg, objs...)
}

// ApplyEstablished applies objs in order (Apply) and waits until the API
// server serves every CustomResourceDefinition among them.
func ApplyEstablished(ctx context.Context, cfg *rest.Config, objs ...*unstructured.Unstructured) error {
	if err := Apply(ctx, cfg, objs...); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crdRes := apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		name := o.GetName()
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			u, err := dyn.Resource(crdRes).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			var crd apiextensionsv1.CustomResourceDefinition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
				return false, err
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", name, err)
		}
	}
	return nil
}

// LocalRBAC applies the namespace, roles and bindings the controller and
// the simulator of a local control plane run with. Without the controller,
// nothing of berth's own: its namespace, roles and bindings are for an
// install (its chart) to make, as in any cluster.
func LocalRBAC(ctx context.Context, cfg *rest.Config, controller bool) error {
	docs, err := config.LocalRBAC(controller)
	if err != nil {
		return err
	}
	objs, err := Decode(docs...)
	if err != nil {
		return err
	}
	if !controller {
		objs = slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool {
			return o.GetName() == ControllerName || (o.GetKind() == "Namespace" && o.GetName() == ControllerNamespace)
		})
	}
	// Namespaces before anything that lives in one.
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].GetKind() == "Namespace" && objs[j].GetKind() != "Namespace" })
	return Apply(ctx, cfg, objs...)
}

// Apply server-side-applies objects in order, each with force: berth owns
// what it installs.
func Apply(ctx context.Context, cfg *rest.Config, objs ...*unstructured.Unstructured) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			// A kind installed a moment ago (a CRD) may be missing from the cache.
			mapper.Reset()
			if m, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				return fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
			}
		}
		data, err := o.MarshalJSON()
		if err != nil {
			return err
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		force := true
		if _, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: FieldManager, Force: &force}); err != nil {
			return fmt.Errorf("applying %s %s: %w", gvk.Kind, o.GetName(), err)
		}
	}
	return nil
}

// Decode splits multi-document YAML into objects.
func Decode(docs ...[]byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, doc := range docs {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(doc), 4096)
		for {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, err
			}
			if len(u.Object) > 0 {
				out = append(out, &u)
			}
		}
	}
	return out, nil
}

// WebhookConfiguration makes the (empty) MutatingWebhookConfiguration the
// controller fills in, as berth's chart does in a cluster: the controller may
// change that one configuration, and make none.
func WebhookConfiguration(ctx context.Context, cfg *rest.Config, name string) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"app.kubernetes.io/managed-by": "berth"}},
	}}
	return Apply(ctx, cfg, u)
}

// VisibilityAPIService makes the APIService of berth's visibility API, as
// berth's chart does in a cluster, naming the Service in namespace that
// the controller points at itself: the controller fills in its port and CA,
// and may change that one APIService but make none (one that could make any
// could serve any API group of the cluster). Applied without the port and
// CA, so applying it again takes nothing back from the controller.
func VisibilityAPIService(ctx context.Context, cfg *rest.Config, namespace string) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": visibilityv1.Version + "." + visibilityv1.GroupName,
			"labels": map[string]any{"app.kubernetes.io/managed-by": "berth"}},
		"spec": map[string]any{"group": visibilityv1.GroupName, "version": visibilityv1.Version,
			"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"service": map[string]any{"namespace": namespace, "name": "berth-visibility"}},
	}}
	return Apply(ctx, cfg, u)
}

// Guard applies the ValidatingAdmissionPolicies (package guard) by which the
// API server refuses edits of queued objects from anyone but berth's
// controller (o.Identity) and, for what they start, the kinds' own
// controllers (o.Controllers).
func Guard(ctx context.Context, cfg *rest.Config, o guard.Options) error {
	return applyPolicies(ctx, cfg, guard.All(o))
}

// GuardKinds applies the policies of kinds: those of the kinds queued from
// configuration, which the controller applies itself.
func GuardKinds(ctx context.Context, cfg *rest.Config, o guard.Options, kinds []guard.Kind) error {
	return applyPolicies(ctx, cfg, guard.Policies(o, kinds))
}

func applyPolicies(ctx context.Context, cfg *rest.Config, policies []client.Object) error {
	var objs []*unstructured.Unstructured
	for _, o := range policies {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return err
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return Apply(ctx, cfg, objs...)
}
