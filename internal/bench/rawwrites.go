package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// rawWriteRate is how many Workload status writes per second the API server
// takes from 32 writers doing nothing else: n merge patches spread over 100
// Workloads that belong to no queue, so no controller acts on them.
func rawWriteRate(ctx context.Context, c client.Client, n int) (float64, error) {
	const ns, objects = "bench-raw", 100
	lbl := map[string]string{Label: "true"}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: lbl}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return 0, fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	wls := make([]*berthv1.Workload, objects)
	for i := range wls {
		wls[i] = &berthv1.Workload{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("probe-%d", i), Namespace: ns, Labels: lbl},
			Spec: berthv1.WorkloadSpec{PodSets: []berthv1.PodSet{{Name: "main", Count: 1,
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}
		if err := c.Create(ctx, wls[i]); err != nil {
			return 0, fmt.Errorf("creating probe workload %s: %w", wls[i].Name, err)
		}
	}
	work := make(chan int)
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	began := time.Now()
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"BenchProbe","status":"True","reason":"Probe","message":"write %d","lastTransitionTime":%q}]}}`,
					i, time.Now().UTC().Format(time.RFC3339))
				if err := c.Status().Patch(ctx, wls[i%objects], client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
					errs <- fmt.Errorf("probe write %d: %w", i, err)
					return
				}
			}
		}()
	}
	for i := range n {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			wg.Wait()
			return 0, err
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return float64(n) / time.Since(began).Seconds(), nil
}
