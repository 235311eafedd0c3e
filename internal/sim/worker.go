package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kwokv1 "github.com/berth-dev/berth/api/kwok/v1alpha1"
	"github.com/berth-dev/berth/internal/sim/delayqueue"
	"github.com/berth-dev/berth/internal/sim/stage"
)

func (s *Simulator) work(ctx context.Context) {
	for {
		it, ok := s.queue.Get(ctx)
		if !ok {
			return
		}
		s.process(ctx, it)
		s.queue.Done(it.Key)
		s.metrics.pending.Set(float64(s.queue.Len()))
	}
}

// process applies a due stage to the newest copy of its object.
func (s *Simulator) process(ctx context.Context, it delayqueue.Item) {
	obj := s.latest(it.Key)
	if obj == nil || string(obj.(metav1.Object).GetUID()) != it.UID {
		return // deleted, or replaced by another object of the same name
	}
	kind, _ := splitKey(it.Key)
	doc, err := toMap(kind, obj)
	if err != nil {
		s.log.Error(err, "reading object", "object", it.Key)
		return
	}
	st := s.stages.Load().byName[it.Stage]
	if st == nil || kindKey(st.Kind) != kind || !st.Matches(doc) {
		// The object moved on since the stage was queued (or the stage was
		// removed): queue whatever applies to it now instead.
		s.offer(kind, obj)
		return
	}
	actions, err := st.Render(doc, env{s})
	if err != nil {
		s.fail(obj, st, err)
		return
	}
	result, err := s.apply(ctx, kind, obj, doc, st, actions)
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		return // gone; its deletion cleans up
	case permanent(err):
		s.fail(obj, st, err)
		return
	default:
		s.retry(it, err)
		return
	}
	s.overlayMu.Lock()
	delete(s.retries, it.Key)
	s.overlayMu.Unlock()
	s.metrics.applied.WithLabelValues(st.Name).Inc()
	if st.Immediate && result != nil {
		s.offer(kind, result)
	}
}

// apply makes the stage's writes in order, skipping each that would change
// nothing, and records its events when it wrote something (or consists of
// events only). It returns the object as the last write left it, nil once
// deleted.
func (s *Simulator) apply(ctx context.Context, kind string, obj runtime.Object, doc map[string]any, st *stage.Stage, actions []stage.Action) (runtime.Object, error) {
	meta := obj.(metav1.Object)
	k := key(kind, meta)
	cur, curDoc := obj, doc
	wrote, writes, applied := false, false, false
	var evts []*kwokv1.StageEvent
	for _, a := range actions {
		switch {
		case a.Event != nil:
			evts = append(evts, a.Event)
			continue
		case a.Apply != nil:
			// Another object (or this one, whole): written as rendered; it
			// changes nothing the next steps see of this one.
			writes = true
			if err := s.writes.apply(ctx, a.Apply, meta.GetNamespace()); err != nil {
				return nil, err
			}
			s.metrics.writes.WithLabelValues(kind, "apply").Inc()
			applied = true
			continue
		case a.Delete:
			if GoneWhenStored(cur.(metav1.Object)) {
				s.metrics.skipped.Inc()
			} else {
				if err := s.writes.delete(ctx, kind, meta.GetNamespace(), meta.GetName(), meta.GetUID()); err != nil && !apierrors.IsNotFound(err) {
					return nil, err
				}
				s.metrics.writes.WithLabelValues(kind, "delete").Inc()
			}
			s.record(obj, evts)
			return nil, nil
		}
		writes = true
		var res runtime.Object
		var err error
		if a.Finalizers != nil {
			want := stage.Finalizers(curDoc, a.Finalizers)
			have := cur.(metav1.Object).GetFinalizers()
			if slices.Equal(want, have) || (len(want) == 0 && len(have) == 0) {
				s.metrics.skipped.Inc()
				continue
			}
			// The version guards against racing another controller that
			// changes the list meanwhile: on conflict the stage is retried.
			data, _ := json.Marshal(map[string]any{"metadata": map[string]any{
				"finalizers": want, "resourceVersion": cur.(metav1.Object).GetResourceVersion()}})
			res, err = s.writes.patch(ctx, kind, meta.GetNamespace(), meta.GetName(), kwokv1.StagePatchTypeMergePatch, data, "", "")
			s.metrics.writes.WithLabelValues(kind, "finalizers").Inc()
		} else {
			next, aerr := stage.Apply(curDoc, st.Kind, []stage.Action{a})
			if aerr != nil {
				return nil, permanentError{fmt.Errorf("patch does not apply: %w", aerr)}
			}
			if reflect.DeepEqual(next, curDoc) {
				s.metrics.skipped.Inc()
				continue
			}
			res, err = s.writes.patch(ctx, kind, meta.GetNamespace(), meta.GetName(), stage.PatchType(a.Patch, st.Kind),
				a.Patch.Data, a.Patch.Subresource, a.Patch.As)
			s.metrics.writes.WithLabelValues(kind, "patch").Inc()
		}
		if err != nil {
			return nil, err
		}
		res.(metav1.Object).SetManagedFields(nil)
		if curDoc, err = toMap(kind, res); err != nil {
			return nil, err
		}
		cur, wrote = res, true
	}
	if wrote {
		s.overlayMu.Lock()
		s.overlay[k] = cur
		s.overlayMu.Unlock()
	}
	if wrote || applied || !writes {
		s.record(cur, evts)
	}
	return cur, nil
}

func (s *Simulator) record(obj runtime.Object, evts []*kwokv1.StageEvent) {
	for _, e := range evts {
		typ := e.Type
		if typ == "" {
			typ = "Normal"
		}
		s.recorder.Eventf(obj, nil, typ, e.Reason, "Simulate", "%s", e.Message)
	}
}

// retry queues the stage again after a backoff that doubles from 100ms to
// 30s. A newer version of the object queued meanwhile takes precedence.
func (s *Simulator) retry(it delayqueue.Item, err error) {
	s.overlayMu.Lock()
	n := s.retries[it.Key]
	s.retries[it.Key] = n + 1
	s.overlayMu.Unlock()
	backoff := min(100*time.Millisecond<<min(n, 9), 30*time.Second)
	s.log.V(1).Info("stage failed, retrying", "object", it.Key, "stage", it.Stage, "after", backoff, "reason", err.Error())
	s.metrics.retries.Inc()
	it.Due = s.clock.Now().Add(backoff)
	s.queue.Offer(it)
}

// fail reports a stage that cannot apply to the object: in the log and as a
// Warning event on the object. It is not retried until the object changes.
func (s *Simulator) fail(obj runtime.Object, st *stage.Stage, err error) {
	s.log.Error(err, "stage failed", "object", key(kindKey(st.Kind), obj.(metav1.Object)), "stage", st.Name)
	s.metrics.failures.WithLabelValues(st.Name).Inc()
	s.recorder.Eventf(obj, nil, "Warning", "StageFailed", "Simulate", "stage %s: %v", st.Name, err)
}

type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// permanent errors would fail the same way again: a template that renders
// an invalid object, a patch the API server rejects as malformed.
func permanent(err error) bool {
	var p permanentError
	return errors.As(err, &p) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsMethodNotSupported(err) || apierrors.IsUnsupportedMediaType(err)
}

// env answers the templates' questions about the simulated world.
type env struct{ s *Simulator }

func (e env) Now() time.Time            { return e.s.clock.Now() }
func (e env) StartTime() time.Time      { return e.s.started }
func (e env) NodeIP(node string) string { return e.s.ips.NodeIP(node) }
func (e env) NodePort() int             { return 10250 }
func (e env) Version() string           { return e.s.cfg.Version }
func (e env) PodIP(node string, hostNetwork bool, uid, name, namespace string) string {
	if hostNetwork {
		return e.s.ips.NodeIP(node)
	}
	if uid == "" {
		uid = namespace + "/" + name
	}
	return e.s.ips.PodIP(node, uid)
}

// GoneWhenStored reports a version of an object that the API server
// deleted in the request that stored it: being deleted without a grace
// period and without finalizers (a finished pod deleted, say). Deleting it
// again would only be refused as not found.
func GoneWhenStored(m metav1.Object) bool {
	g := m.GetDeletionGracePeriodSeconds()
	return m.GetDeletionTimestamp() != nil && (g == nil || *g == 0) && len(m.GetFinalizers()) == 0
}
