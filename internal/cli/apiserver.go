package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// awaitAPIServer waits until the API server of cfg answers /readyz, saying
// so on log now and then, or until ctx ends. berth's components start with
// it: one restarted while its API server is down (killed too, or
// restarting) waits for it, as kube-scheduler does, rather than exiting at
// once, which its supervisor would take for a crash loop.
func awaitAPIServer(ctx context.Context, cfg *rest.Config, log io.Writer) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	began, said := time.Now(), time.Time{}
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(cctx)
		cancel()
		if err == nil {
			if !said.IsZero() {
				fmt.Fprintf(log, "the API server at %s answers, after %s\n", cfg.Host, time.Since(began).Round(time.Second))
			}
			return nil
		}
		if time.Since(said) > 10*time.Second {
			fmt.Fprintf(log, "waiting for the API server at %s: %v\n", cfg.Host, err)
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the API server at %s did not answer: %w", cfg.Host, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
