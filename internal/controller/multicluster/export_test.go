package multicluster

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/event"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// ConnectAndForget connects to the worker cfg reaches as the dispatcher
// does for an Active WorkerCluster, and returns what the dispatcher does
// when that WorkerCluster is deleted.
func ConnectAndForget(ctx context.Context, cfg *rest.Config) (forget func(), err error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := berthv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	w := &Workers{scheme: scheme, origin: "leak-test", events: make(chan event.GenericEvent, 1024),
		byName: map[string]*worker{}, changed: func(string) {}}
	conn, err := w.connect(ctx, "w", rest.CopyConfig(cfg), "key", false)
	if err != nil {
		return nil, err
	}
	w.set("w", &worker{active: true, conn: conn})
	return func() { w.set("w", nil) }, nil
}
