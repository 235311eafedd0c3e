package sim

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// reconcilePool creates the pool's missing nodes and deletes those it made
// beyond its count, 16 at a time, logging progress for large pools.
func (s *Simulator) reconcilePool(ctx context.Context) error {
	p := s.cfg.Pool
	var existing []string
	for _, o := range s.nodes.GetStore().List() {
		if n := o.(*corev1.Node); p.Owns(n) {
			existing = append(existing, n.Name)
		}
	}
	create, remove := p.Reconcile(existing)
	if len(create) == 0 && len(remove) == 0 {
		return nil
	}
	began := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i, n := range create {
		g.Go(func() error {
			_, err := s.client.CoreV1().Nodes().Create(gctx, n, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating node %s: %w", n.Name, err)
			}
			if done := i + 1; done%1000 == 0 {
				s.log.Info("creating nodes", "created", done, "of", len(create))
			}
			return nil
		})
	}
	for _, name := range remove {
		g.Go(func() error {
			err := s.client.CoreV1().Nodes().Delete(gctx, name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting node %s: %w", name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	s.log.Info("node pool in place", "created", len(create), "deleted", len(remove), "took", time.Since(began).Round(time.Millisecond).String())
	return nil
}
