package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Kind is what berth needs of one kind of workload.
type Kind interface {
	// New returns an empty object of the kind.
	New() client.Object
	// QueueName is the LocalQueue obj is submitted to, "" when it is none
	// of berth's business.
	QueueName(obj client.Object) string
	// PodSets describes obj's pods for its Workload.
	PodSets(obj client.Object) []berthv1.PodSet
	// Hold keeps a new obj from running until it is admitted (a Job is
	// suspended, a Pod gated); it reports whether it changed obj.
	Hold(obj client.Object) bool
	// Start lets obj run on its flavors' nodes, their node labels and
	// tolerations added to its pods: flavors are by pod set name.
	Start(obj client.Object, flavors map[string][]*berthv1.ResourceFlavor) error
	// Finished reports whether obj has ended, and whether it failed.
	Finished(obj client.Object) (finished, failed bool)
	// HeldFields are the fields Hold and HoldGrowth may change, each at a
	// JSON pointer whose parent every object of the kind has. The webhook
	// answers with a patch of those that changed, not a diff of the whole
	// object: most of its own work, and a field berth's copy of the type
	// does not know (a newer API server's) cannot be patched away.
	HeldFields(obj client.Object) []Field
}

// Steerer is a Kind whose pods berth can give topology domains though
// they ask for none: a Job's (its pod template is labelled so that the pod
// webhook gates its pods until the placement reconciler gives each a
// domain), a Pod's (created with the topology gate, kept only if placed).
// Start calls Steer after the Kind's Start, placed saying whether the
// admission gave the pod set a topology assignment.
type Steerer interface {
	Steer(obj client.Object, queue string, placed bool) error
}

// Shrinker is a Kind whose objects may ask to run with fewer pods than they
// want (partial admission: a pod set's minCount): Start calls Shrink after
// the Kind's Start with the pods admitted of each pod set, and Shrink makes
// obj run no more (a Job's parallelism), keeping what it had for when it is
// held again.
type Shrinker interface {
	Shrink(obj client.Object, admitted func(podSet string) int32) error
}

// Refuser is a Kind that refuses some objects at creation, such as those
// asking for what berth does not support yet, or asking for a queue in a
// way that would not be honoured; Refuse says why, or "". It sees every
// object the webhook is sent, queued or not.
type Refuser interface {
	Refuse(obj client.Object) string
}

// Grower is a Kind whose running objects may be made to run more pods at
// once (a Job's parallelism): HoldGrowth holds back, in the same write, an
// update of a queued obj that does so, since the pods would otherwise start
// before berth could queue it again; it reports whether it changed obj.
type Grower interface {
	HoldGrowth(old, obj client.Object) bool
}

// Field is one field of an object: where it is, and its value.
type Field struct {
	Path  string // a JSON pointer, "/spec/suspend"
	Value any
}

// Holder is the mutating webhook of a kind: objects that a queue is asked
// for are created held back (Kind.Hold), and updates that would make them
// grow while they run are held back too (Grower).
type Holder struct {
	kind   Kind
	owners *Owners
	// self is berth's controller: its own updates (a raise it admitted)
	// are not held back.
	self string
}

// NewHolder returns the webhook handler for kind.
func NewHolder(kind Kind) *Holder { return &Holder{kind: kind} }

// Vouching makes h refuse a new object of an Owned kind whose controller
// reference owners do not vouch for (Owners.Vouch).
func (h *Holder) Vouching(owners *Owners) *Holder { h.owners = owners; return h }

// Trusting makes h let the updates of user self (berth's controller) grow
// what they update: berth raises a running Job's parallelism itself once
// the increase is admitted.
func (h *Holder) Trusting(self string) *Holder { h.self = self; return h }

// fields are the kind's HeldFields and the object's labels, which the
// Holder sets to the queue of an object queued without asking for one (in a
// namespace where everything is queued).
func (h *Holder) fields(obj client.Object) []Field {
	f := h.kind.HeldFields(obj)
	for _, x := range f {
		if x.Path == "/metadata/labels" {
			return f
		}
	}
	return append(f, Field{Path: "/metadata/labels", Value: obj.GetLabels()})
}

// decode reads an object the API server sent. Its kind is known, so plain
// JSON does: the scheme's decoder would first read the whole object once
// more only to find out its kind.
func decode(raw runtime.RawExtension, into client.Object) error {
	if len(raw.Raw) == 0 {
		return fmt.Errorf("the request has no object")
	}
	return json.Unmarshal(raw.Raw, into)
}

// Handle holds back a new object that asks for a queue, or an update that
// makes a queued one grow. Where everything is queued (a Kind queueing what
// asks for none), an update that takes the queue label off finds the
// default queue's put back.
func (h *Holder) Handle(ctx context.Context, req admission.Request) admission.Response {
	obj := h.kind.New()
	if err := decode(req.Object, obj); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	// Taken now: Hold may change maps and slices in place.
	before, err := Snapshot(h.fields(obj))
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if req.Operation == admissionv1.Update {
		queue := h.kind.QueueName(obj)
		if queue == "" {
			return admission.Allowed("updates of this object are not held back")
		}
		changed := labelQueue(obj, queue)
		if g, ok := h.kind.(Grower); ok && (h.self == "" || req.UserInfo.Username != h.self) {
			old := h.kind.New()
			if err := decode(req.OldObject, old); err != nil {
				return admission.Errored(http.StatusBadRequest, err)
			}
			changed = g.HoldGrowth(old, obj) || changed
		}
		if !changed {
			return admission.Allowed("neither grows nor leaves its queue")
		}
		return FieldPatch(before, h.fields(obj))
	}
	if r, ok := h.kind.(Refuser); ok {
		if why := r.Refuse(obj); why != "" {
			return admission.Denied(why)
		}
	}
	if o, ok := h.kind.(Owned); ok && h.owners != nil {
		if ref := o.QueuingOwner(obj); ref != nil {
			why, err := h.owners.Vouch(ctx, req.Kind.Kind, req.UserInfo.Username, obj, ref)
			if err != nil {
				return admission.Errored(http.StatusInternalServerError, err)
			}
			if why != "" {
				return admission.Denied(why)
			}
		}
	}
	queue := h.kind.QueueName(obj)
	if queue == "" {
		return admission.Allowed("not queued by berth")
	}
	if _, err := MaxExecTime(obj.GetLabels()); err != nil {
		return admission.Denied(fmt.Sprintf("%s %s: %v", req.Kind.Kind, obj.GetName(), err))
	}
	held := h.kind.Hold(obj)
	if labelQueue(obj, queue) {
		held = true
	}
	if !held {
		return admission.Allowed("already held")
	}
	return FieldPatch(before, h.fields(obj))
}

// labelQueue gives obj, queued in queue without asking for it (its
// namespace queues everything), the label that says so, which package
// guard then keeps on as on any queued object. It reports whether it
// changed obj.
func labelQueue(obj client.Object, queue string) bool {
	if QueueName(obj.GetLabels()) != "" {
		return false
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[berthv1.QueueNameLabel] = queue
	obj.SetLabels(labels)
	return true
}

// Snapshot is the fields' values as JSON, to compare with later.
func Snapshot(fields []Field) ([][]byte, error) {
	out := make([][]byte, len(fields))
	for i, f := range fields {
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		out[i] = v
	}
	return out, nil
}

// FieldPatch answers a request with the JSON patch that takes each field
// from its value in before (its Snapshot) to its value in fields now (the
// same paths, in the same order): set where it has a value now, removed where it had
// one and has none now, left out where it did not change.
func FieldPatch(before [][]byte, fields []Field) admission.Response {
	var ops []jsonpatch.JsonPatchOperation
	for i, f := range fields {
		was := before[i]
		now, err := json.Marshal(f.Value)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		switch {
		case bytes.Equal(was, now):
		case bytes.Equal(now, null):
			ops = append(ops, jsonpatch.JsonPatchOperation{Operation: "remove", Path: f.Path})
		default:
			// "add" sets a member whether or not it is there already.
			ops = append(ops, jsonpatch.JsonPatchOperation{Operation: "add", Path: f.Path, Value: json.RawMessage(now)})
		}
	}
	resp := admission.Allowed("")
	if len(ops) > 0 {
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patches, resp.PatchType = ops, &pt
	}
	return resp
}

var null = []byte("null")
