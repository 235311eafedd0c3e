package sim

import (
	"context"
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	kwokv1 "github.com/berth-dev/berth/api/kwok/v1alpha1"
	"github.com/berth-dev/berth/internal/sim/stage"
)

var stageResource = kwokv1.GroupVersion.WithResource("stages")

// watchClusterStages layers Stage objects from the cluster over the
// configured stages, and keeps doing so as they change. Without the Stage
// CRD there is nothing to watch. A Stage that does not compile is left out
// and reported with a Warning event on it; the others apply.
func (s *Simulator) watchClusterStages(ctx context.Context) error {
	_, err := s.client.Discovery().ServerResourcesForGroupVersion(kwokv1.GroupVersion.String())
	if apierrors.IsNotFound(err) {
		s.log.Info("the kwok.x-k8s.io Stage CRD is not installed: using configured stages only")
		return nil
	}
	if err != nil {
		return fmt.Errorf("looking for the Stage CRD: %w", err)
	}
	dyn, err := dynamic.NewForConfig(s.rest)
	if err != nil {
		return err
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	inf := factory.ForResource(stageResource).Informer()
	rebuild := func(any) { s.rebuildStages(inf.GetStore()) }
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: rebuild, UpdateFunc: func(_, n any) { rebuild(n) }, DeleteFunc: rebuild,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return ctx.Err()
	}
	return nil
}

// rebuildStages recompiles the stage set from the configured stages and
// every valid Stage object, then looks at every managed object again: a new
// stage may apply to objects that have not changed. Each version of a Stage
// gets one event: Loaded, or InvalidStage with the reason. It runs on the
// Stage informer's goroutine only.
func (s *Simulator) rebuildStages(store cache.Store) {
	var cluster []*kwokv1.Stage
	reported := map[string]string{}
	for _, o := range store.List() {
		u := o.(*unstructured.Unstructured)
		version := string(u.GetUID()) + "/" + strconv.FormatInt(u.GetGeneration(), 10)
		reported[u.GetName()] = version
		news := s.stageVersions[u.GetName()] != version && s.recorder != nil
		var st kwokv1.Stage
		err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &st)
		if err == nil {
			_, err = stage.Compile(&st)
		}
		if err != nil {
			if news {
				s.log.Error(err, "ignoring Stage", "stage", u.GetName())
				s.recorder.Eventf(u, nil, "Warning", "InvalidStage", "Load", "%v", err)
			}
			continue
		}
		if news {
			s.recorder.Eventf(u, nil, "Normal", "Loaded", "Load", "stage %s is in force", u.GetName())
		}
		cluster = append(cluster, &st)
	}
	s.stageVersions = reported
	set, err := compileSet(Layer(s.cfg.Stages, cluster))
	if err != nil {
		s.log.Error(err, "stages")
	}
	s.stages.Store(set)
	s.log.Info("stages loaded", "configured", len(s.cfg.Stages), "fromCluster", len(cluster), "inForce", len(set.byName))
	ctx := s.runCtx.Load()
	if ctx == nil {
		return // before the first sync: Run watches the kinds, then looks
	}
	s.watchKinds(*ctx, set)
	for _, n := range s.nodes.GetStore().List() {
		s.consider("Node", n.(runtime.Object))
	}
	for _, p := range s.pods.GetStore().List() {
		s.onPod(p)
	}
	for kind, store := range s.others.stores() {
		for _, o := range store.List() {
			s.consider(kind, o.(runtime.Object))
		}
	}
}
