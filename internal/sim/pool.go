package sim

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/berth-dev/berth/internal/sim/stage"
)

// reconcilePool creates the pool's missing nodes and deletes those it made
// beyond its count, 32 at a time, logging progress for large pools. Each
// new node's Lease is created right after it: creating nodes faster than
// their leases would leave nodes the node lifecycle controller soon marks
// unreachable, and the writes that follow cost more than the wait.
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
	g.SetLimit(32)
	for i, n := range create {
		g.Go(func() error {
			created, err := s.client.CoreV1().Nodes().Create(gctx, s.initialised(n), metav1.CreateOptions{})
			switch {
			case err == nil:
				s.leases.start(gctx, created)
			case !apierrors.IsAlreadyExists(err):
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

// initialised is the node as it is created: when the stage that applies to a
// new node is due at once and only patches it (the default node-initialize
// is), it is applied before the node is created, so the node is created
// Ready in one write instead of being created, tainted not-ready by the node
// lifecycle controller, patched and untainted. Anything else, errors
// included, is left to the stage's usual path once the node exists, which
// reports them.
func (s *Simulator) initialised(n *corev1.Node) *corev1.Node {
	doc, err := toMap("Node", n)
	if err != nil {
		return n
	}
	st := s.pick("Node", doc)
	if st == nil {
		return n
	}
	s.rngMu.Lock()
	d := st.Delay(doc, s.clock.Now(), s.rng)
	s.rngMu.Unlock()
	if d > 0 {
		return n
	}
	actions, err := st.Render(doc, env{s})
	if err != nil {
		return n
	}
	for _, a := range actions {
		if a.Patch == nil {
			return n // events and deletions need the node to exist
		}
	}
	after, err := stage.Apply(doc, st.Kind, actions)
	if err != nil || after == nil {
		return n
	}
	var out corev1.Node
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(after, &out); err != nil {
		return n
	}
	return &out
}
