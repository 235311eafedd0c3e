package bench

import (
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/berth-dev/berth/internal/controller"
)

// Client rates of the runners. A bench is a load generator: its limits are
// far above a controller's, so the API server, not the client, is what it
// measures. sim-scale drives only built-in kinds, in protobuf, which the
// API server encodes and decodes faster than JSON.
const (
	benchQPS, benchBurst       = 1000, 2000
	simScaleQPS, simScaleBurst = 5000, 5000
)

// apiClients are the clients a runner talks to the API server with, and the
// config they were made from (for caches).
type apiClients struct {
	cfg  *rest.Config
	kube kubernetes.Interface
	c    client.Client
}

// connect makes a runner's clients from cfg at the given rate.
func connect(cfg *rest.Config, qps float32, burst int, protobuf bool) (*apiClients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = qps, burst
	if protobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: controller.Scheme()})
	if err != nil {
		return nil, err
	}
	return &apiClients{cfg: cfg, kube: kube, c: c}, nil
}
