package sim

import (
	"context"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
)

// kindKey names a kind in the simulator's queue and stage set: its Kind for
// core kinds (Node, Pod), Kind.group otherwise. It holds no "/", which
// separates it from the object's key.
func kindKey(gvk schema.GroupVersionKind) string {
	if gvk.Group == "" {
		return gvk.Kind
	}
	return gvk.Kind + "." + gvk.Group
}

// builtIn are the kinds the simulator watches with typed informers, limited
// to its own nodes and the pods bound to them.
func builtIn(key string) bool { return key == "Node" || key == "Pod" }

// other is a kind besides Node and Pod that stages act on: every object of
// it in the cluster is offered to them (their selectors choose).
type other struct {
	resource   schema.GroupVersionResource
	namespaced bool
	informer   cache.SharedIndexInformer
}

// kinds watches the other kinds the stages in force name, resolving each
// through the API server's discovery.
type kinds struct {
	dyn     dynamic.Interface
	mapper  meta.ResettableRESTMapper
	factory dynamicinformer.DynamicSharedInformerFactory

	mu      sync.Mutex
	byKey   map[string]*other
	missing map[string]bool // kinds the cluster does not serve, reported once
}

func newKinds(dyn dynamic.Interface, disco discovery.DiscoveryInterface) *kinds {
	return &kinds{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)),
		factory: dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0),
		byKey:   map[string]*other{}, missing: map[string]bool{}}
}

// mapping resolves a kind to its resource, asking discovery again once
// when the kind is new to it (a CRD installed since).
func (k *kinds) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		k.mapper.Reset()
		m, err = k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	return m, err
}

// get returns the watched kind of a key, if any.
func (k *kinds) get(key string) (*other, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	o, ok := k.byKey[key]
	return o, ok
}

// stores lists the watched kinds' keys and stores.
func (k *kinds) stores() map[string]cache.Store {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make(map[string]cache.Store, len(k.byKey))
	for key, o := range k.byKey {
		out[key] = o.informer.GetStore()
	}
	return out
}

// watchKinds starts watching every other kind the stage set names that is not
// watched yet, and waits until their first lists are in.
func (s *Simulator) watchKinds(ctx context.Context, set *stageSet) {
	var started []cache.InformerSynced
	keys := make([]string, 0, len(set.byKind))
	for kind := range set.byKind {
		keys = append(keys, kind)
	}
	sort.Strings(keys)
	k := s.others
	for _, kind := range keys {
		if builtIn(kind) {
			continue
		}
		k.mu.Lock()
		_, watched := k.byKey[kind]
		k.mu.Unlock()
		if watched {
			continue
		}
		gvk := set.byKind[kind][0].Kind
		m, err := k.mapping(gvk)
		if err != nil {
			k.mu.Lock()
			report := !k.missing[kind]
			k.missing[kind] = true
			k.mu.Unlock()
			if report {
				s.log.Error(err, "the cluster does not serve a kind stages act on; they wait until it does", "kind", gvk.String())
			}
			continue
		}
		inf := k.factory.ForResource(m.Resource).Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { s.consider(kind, o.(runtime.Object)) },
			UpdateFunc: func(_, o any) { s.consider(kind, o.(runtime.Object)) },
			DeleteFunc: func(o any) {
				if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
					o = d.Obj
				}
				if m, ok := o.(metav1.Object); ok {
					s.forget(key(kind, m), string(m.GetUID()))
				}
			},
		}); err != nil {
			s.log.Error(err, "watching", "kind", gvk.String())
			continue
		}
		k.mu.Lock()
		k.byKey[kind] = &other{resource: m.Resource, namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace, informer: inf}
		delete(k.missing, kind)
		k.mu.Unlock()
		started = append(started, inf.HasSynced)
		s.log.Info("watching a kind for its stages", "kind", gvk.String(), "resource", m.Resource.String())
	}
	if len(started) > 0 {
		k.factory.Start(ctx.Done())
		cache.WaitForCacheSync(ctx.Done(), started...)
	}
}
