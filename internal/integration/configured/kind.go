package configured

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration"
)

// Kind is a configured kind as an integration.Kind, over unstructured
// objects. Default queues an object that asks for no queue in LocalQueue
// "default" (served only where every object is queued).
type Kind struct {
	C       *Compiled
	Default bool
}

var (
	_ integration.Kind     = Kind{}
	_ integration.Refuser  = Kind{}
	_ integration.Owned    = Kind{}
	_ integration.Shrinker = Kind{}
)

// QueuingOwner is obj's controller reference when it names a kind of the
// configuration's OwnedBy (a RayCluster's RayJob), else nil.
func (k Kind) QueuingOwner(obj client.Object) *metav1.OwnerReference {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || !slices.Contains(k.C.OwnedBy, ref.Kind) {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != k.C.Group {
		return nil
	}
	return ref
}

// New is an empty object of the kind.
func (k Kind) New() client.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.C.GVK)
	return u
}

// QueueName is "" for an object made for an owner it is queued with
// (QueuingOwner): its owner's Workload counts its pods.
func (k Kind) QueueName(obj client.Object) string {
	if k.QueuingOwner(obj) != nil {
		return ""
	}
	if q := integration.QueueName(obj.GetLabels()); q != "" || !k.Default {
		return q
	}
	return integration.DefaultLocalQueue
}

// Suspended reports whether the suspend field is true.
func (c *Compiled) Suspended(u *unstructured.Unstructured) bool {
	v, found, err := unstructured.NestedBool(u.Object, c.Suspend...)
	return found && err == nil && v
}

// slot is one pod set as an object has it: a configured pod set, or one
// entry of a configured list, with the map its paths are read in.
type slot struct {
	name string
	ps   *CompiledPodSet
	// in is the object, or the list's entry; at says where, for errors.
	in map[string]any
	at string
}

// path is p as written in u: within the entry, for a list's.
func (s slot) path(p Path) string {
	if s.at == "" {
		return p.String()
	}
	return s.at + "." + p.String()
}

// slots are u's pod sets in the order configured, a list's in its order,
// or an error naming the field when a list or an entry's name cannot be
// read, or names a pod set twice, or there are more than a Workload holds.
func (c *Compiled) slots(u *unstructured.Unstructured) ([]slot, error) {
	var out []slot
	seen := map[string]string{}
	add := func(s slot, where string) error {
		if prev, ok := seen[s.name]; ok {
			return fmt.Errorf("%s: names pod set %q, as %s does", where, s.name, prev)
		}
		seen[s.name] = where
		out = append(out, s)
		return nil
	}
	for i := range c.PodSets {
		ps := &c.PodSets[i]
		if ps.List == nil {
			if ps.When != nil && !ps.When.Holds(u.Object) {
				continue
			}
			if err := add(slot{name: ps.Name, ps: ps, in: u.Object}, "podSets["+ps.Name+"]"); err != nil {
				return nil, err
			}
			continue
		}
		v, found, err := unstructured.NestedFieldNoCopy(u.Object, ps.List...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ps.List, err)
		}
		if !found || v == nil {
			continue
		}
		entries, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: is not a list", ps.List)
		}
		for j, e := range entries {
			at := fmt.Sprintf("%s[%d]", ps.List, j)
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: is not an object", at)
			}
			name, _, err := unstructured.NestedString(m, ps.NameFrom...)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", at, ps.NameFrom, err)
			}
			if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
				return nil, fmt.Errorf("%s.%s: %q names its pod set, which must be a DNS label: %s", at, ps.NameFrom, name, strings.Join(errs, "; "))
			}
			if err := add(slot{name: name, ps: ps, in: m, at: at}, at+"."+ps.NameFrom.String()); err != nil {
				return nil, err
			}
		}
	}
	if len(out) > MaxPodSets {
		return nil, fmt.Errorf("it has %d pod sets; berth queues at most %d pod sets of one object", len(out), MaxPodSets)
	}
	return out, nil
}

// template reads a slot's template, or its default where it has none;
// found false when it has neither.
func (s slot) template() (t corev1.PodTemplateSpec, found bool, err error) {
	m, found, err := unstructured.NestedMap(s.in, s.ps.Template...)
	if err == nil && !found && s.ps.Default != nil {
		return *s.ps.Default.DeepCopy(), true, nil
	}
	if err != nil || !found {
		return t, found, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &t); err != nil {
		return t, true, err
	}
	return t, true, nil
}

// topology reads what placement a slot's template t asks for, nil for
// none; an error names the annotation that is wrong, or says why c's
// objects cannot be placed yet.
func (s slot) topology(c *Compiled, t corev1.PodTemplateSpec) (*berthv1.TopologyRequest, error) {
	if s.defaulted() {
		return nil, nil // berth writes nothing on a default template
	}
	req, err := integration.TopologyRequestOf(t.Annotations)
	if err != nil {
		return nil, fmt.Errorf("%s.metadata.annotations: %w", s.path(s.ps.Template), err)
	}
	if req != nil && len(c.Owns) > 0 {
		// The owned object's pods name it, not u, as their controller:
		// the placement cannot tell whose they are.
		owned := make([]string, len(c.Owns))
		for i, o := range c.Owns {
			owned[i] = o.Kind
		}
		return nil, fmt.Errorf("%s.metadata.annotations: topology-aware placement of a %s is not supported yet: its pods are made by the %s it makes",
			s.path(s.ps.Template), c.Kind, strings.Join(owned, " or "))
	}
	return req, nil
}

// partial reads whether u asks for partial admission
// (berthv1.PartialAdmissionAnnotation), refusing a value other than true or
// false, and a kind whose pod sets have no least count to go down to.
func (c *Compiled) partial(u *unstructured.Unstructured) (bool, error) {
	v, ok := u.GetAnnotations()[berthv1.PartialAdmissionAnnotation]
	if !ok {
		return false, nil
	}
	yes, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("metadata.annotations[%s]: %q: want true or false", berthv1.PartialAdmissionAnnotation, v)
	}
	if yes && !slices.ContainsFunc(c.PodSets, func(ps CompiledPodSet) bool { return ps.MinCount != nil }) {
		return false, fmt.Errorf("metadata.annotations[%s]: berth's configuration of %s gives no pod set a least count (minCount) to admit fewer pods down to",
			berthv1.PartialAdmissionAnnotation, c.Kind)
	}
	return yes, nil
}

// least is the fewest pods a slot of n pods may be admitted with, for an
// object that allows partial admission: its least count, where the kind
// has one below n; nil when it may not run with fewer. Placed by topology,
// or of several pods per count, it is not supported yet.
func (s slot) least(n int32, placed bool) (*int32, error) {
	if s.ps.MinCount == nil {
		return nil, nil
	}
	lo, found, err := s.integer(s.ps.MinCount)
	if err != nil || !found || lo < 1 || lo >= int64(n) {
		return nil, err
	}
	if s.ps.PodsPerCount != nil {
		if per, found, err := s.integer(s.ps.PodsPerCount); err != nil {
			return nil, err
		} else if found && per != 1 {
			return nil, fmt.Errorf("%s: %d pods per count: partial admission of a pod set of more than one pod per count is not supported yet", s.path(s.ps.PodsPerCount), per)
		}
	}
	if placed {
		return nil, fmt.Errorf("%s.metadata.annotations: partial admission of a pod set placed by topology is not supported yet", s.path(s.ps.Template))
	}
	least := int32(lo)
	return &least, nil
}

// placed marks a slot's template, whose pod set is placed by topology or
// not: a placed one's pods carry berth.dev/topology-placed, so that the
// Pod webhook creates them gated and the placement reconciler gives each
// its domain, and the name of their pod set. An unplaced one loses both,
// which an earlier start may have left.
func (s slot) placed(yes bool) error {
	meta := append(append(Path{}, s.ps.Template...), "metadata")
	label := append(append(Path{}, meta...), "labels", berthv1.TopologyPlacedLabel)
	podSet := append(append(Path{}, meta...), "annotations", berthv1.PodSetAnnotation)
	if !yes {
		unstructured.RemoveNestedField(s.in, label...)
		unstructured.RemoveNestedField(s.in, podSet...)
		return nil
	}
	if err := unstructured.SetNestedField(s.in, "true", label...); err != nil {
		return fmt.Errorf("%s.metadata.labels: %w", s.path(s.ps.Template), err)
	}
	if err := unstructured.SetNestedField(s.in, s.name, podSet...); err != nil {
		return fmt.Errorf("%s.metadata.annotations: %w", s.path(s.ps.Template), err)
	}
	return nil
}

// defaulted reports whether the slot runs its default template: one berth
// cannot put flavors' settings on.
func (s slot) defaulted() bool {
	if s.ps.Default == nil {
		return false
	}
	_, found, _ := unstructured.NestedFieldNoCopy(s.in, s.ps.Template...)
	return !found
}

// Unfollowed are the pod sets of u that run a default template (Default):
// their pods carry no label of u's, so berth does not find them.
func (c *Compiled) Unfollowed(u *unstructured.Unstructured) []string {
	slots, _ := c.slots(u)
	var out []string
	for _, s := range slots {
		if s.defaulted() {
			out = append(out, s.name)
		}
	}
	return out
}

// integer reads the whole number at p, found false when absent.
func (s slot) integer(p Path) (n int64, found bool, err error) {
	v, found, err := unstructured.NestedFieldNoCopy(s.in, p...)
	if err != nil || !found || v == nil {
		return 0, false, err
	}
	switch x := v.(type) {
	case int64:
		n = x
	case float64:
		if x != math.Trunc(x) {
			return 0, true, fmt.Errorf("%s: %v is not a whole number", s.path(p), x)
		}
		n = int64(x)
	default:
		return 0, true, fmt.Errorf("%s: %v is not a number", s.path(p), v)
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, true, fmt.Errorf("%s: %d is out of range", s.path(p), n)
	}
	return n, true, nil
}

// count is how many pods the kind's controller runs of a slot: its count
// (one when it has no path, or u does not set it) kept within its bounds,
// as the controller keeps it, times the pods of each.
func (s slot) count() (int32, error) {
	n := int64(1)
	read := func(p Path) (int64, bool, error) {
		if p == nil {
			return 0, false, nil
		}
		return s.integer(p)
	}
	if v, found, err := read(s.ps.Count); err != nil {
		return 0, err
	} else if found {
		n = v
	}
	lo, hasLo, err := read(s.ps.MinCount)
	if err != nil {
		return 0, err
	}
	hi, hasHi, err := read(s.ps.MaxCount)
	if err != nil {
		return 0, err
	}
	if hasLo && n < lo {
		n = lo
	}
	if hasHi && n > hi {
		n = hi
	}
	per, found, err := read(s.ps.PodsPerCount)
	if err != nil {
		return 0, err
	}
	if found {
		n *= per
	}
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("%s: %d pods is out of range", s.path(s.ps.Template), n)
	}
	return int32(n), nil
}

// ReadPodSets describes u's pods for its Workload: one pod set per
// configured pod set (or list entry) that has a template and pods, of
// the pods its count says, or an error naming the path that cannot be read.
func (c *Compiled) ReadPodSets(u *unstructured.Unstructured) ([]berthv1.PodSet, error) {
	slots, err := c.slots(u)
	if err != nil {
		return nil, err
	}
	partial, err := c.partial(u)
	if err != nil {
		return nil, err
	}
	var out []berthv1.PodSet
	for _, s := range slots {
		t, found, err := s.template()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.path(s.ps.Template), err)
		}
		if !found {
			continue
		}
		n, err := s.count()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			continue
		}
		ps := integration.PodSetOf(s.name, n, &t.Spec)
		if ps.TopologyRequest, err = s.topology(c, t); err != nil {
			return nil, err
		}
		if partial {
			if ps.MinCount, err = s.least(n, ps.TopologyRequest != nil); err != nil {
				return nil, err
			}
		}
		out = append(out, ps)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("it has no pods: none of %s is set with a count above zero", c.templatePaths())
	}
	return out, nil
}

func (c *Compiled) templatePaths() string {
	var s []string
	for _, ps := range c.PodSets {
		if ps.List != nil {
			s = append(s, ps.List.String()+"[*]."+ps.Template.String())
			continue
		}
		s = append(s, ps.Template.String())
	}
	return strings.Join(s, ", ")
}

// Uses says which unsupported field u sets to other than its zero value,
// or "".
func (c *Compiled) Uses(u *unstructured.Unstructured) string {
	for _, p := range c.Unsupported {
		v, found, _ := unstructured.NestedFieldNoCopy(u.Object, p...)
		if !found || v == nil {
			continue
		}
		switch x := v.(type) {
		case bool:
			if !x {
				continue
			}
		case int64:
			if x == 0 {
				continue
			}
		case float64:
			if x == 0 {
				continue
			}
		case string:
			if x == "" {
				continue
			}
		case []any:
			if len(x) == 0 {
				continue
			}
		case map[string]any:
			if len(x) == 0 {
				continue
			}
		}
		return p.String()
	}
	return ""
}

// PodSets are u's pod sets; nil when they cannot be read (Refuse says why).
func (k Kind) PodSets(obj client.Object) []berthv1.PodSet {
	ps, _ := k.C.ReadPodSets(obj.(*unstructured.Unstructured))
	return ps
}

// Refuse says why u cannot be queued as it is, naming the field, or "".
// What berth does not do for configured kinds yet is refused rather than
// ignored: prebuilt Workloads, and what ReadPodSets refuses (placement of
// a kind whose pods another object makes, partial admission of a placed
// pod set or of several pods per count). A queue label on a pod template
// would queue its pods one by one, beside the object: the object is
// queued whole, by its own label.
func (k Kind) Refuse(obj client.Object) string {
	u := obj.(*unstructured.Unstructured)
	who := fmt.Sprintf("%s %s", k.C.Kind, u.GetName())
	slots, err := k.C.slots(u)
	if err != nil {
		return fmt.Sprintf("%s: %v", who, err)
	}
	for _, s := range slots {
		t, found, err := s.template()
		if err != nil {
			return fmt.Sprintf("%s: %s: %v", who, s.path(s.ps.Template), err)
		}
		if !found || s.defaulted() {
			continue
		}
		if q := integration.QueueName(t.Labels); q != "" {
			return fmt.Sprintf("%s: %s.metadata.labels asks for LocalQueue %s; a %s is queued whole by the queue label on itself (metadata.labels): move the label there",
				who, s.path(s.ps.Template), q, k.C.Kind)
		}
		if k.QueueName(u) == "" {
			continue
		}
		// Its own UID, as berth's start left it, is no claim on another's pods.
		if v, set := t.Labels[berthv1.OwnerUIDLabel]; set && v != string(u.GetUID()) {
			return fmt.Sprintf("%s: %s.metadata.labels[%s]: berth sets this label itself when it starts the %s", who, s.path(s.ps.Template), berthv1.OwnerUIDLabel, k.C.Kind)
		}
	}
	if k.QueueName(u) == "" {
		return ""
	}
	if p := k.C.Uses(u); p != "" {
		return fmt.Sprintf("%s: %s: is set; berth does not follow it for a %s yet, so a queued %s may not set it", who, p, k.C.Kind, k.C.Kind)
	}
	for _, r := range k.C.Requires {
		if !r.Holds(u.Object) {
			got := "not set"
			if v, found, _ := unstructured.NestedFieldNoCopy(u.Object, r.Path...); found {
				b, _ := json.Marshal(v)
				got = string(b)
			}
			return fmt.Sprintf("%s: %s: is %s; a queued %s has %s (others are not supported yet)", who, r.Path, got, k.C.Kind, r.Want())
		}
	}
	if _, ok := u.GetLabels()[berthv1.PrebuiltWorkloadLabel]; ok {
		return fmt.Sprintf("%s: metadata.labels[%s]: prebuilt Workloads (dispatch to worker clusters) of a kind queued from configuration are not supported yet",
			who, berthv1.PrebuiltWorkloadLabel)
	}
	for _, key := range []string{berthv1.JobMinParallelismAnnotation, berthv1.KueueJobMinParallelismAnnotation} {
		if _, ok := u.GetAnnotations()[key]; ok {
			return fmt.Sprintf("%s: metadata.annotations[%s]: a Job's annotation; a %s allows partial admission with %s: \"true\" (each pod set down to its least count)",
				who, key, k.C.Kind, berthv1.PartialAdmissionAnnotation)
		}
	}
	if _, err := k.C.ReadPodSets(u); err != nil {
		return fmt.Sprintf("%s: %v", who, err)
	}
	return ""
}

// Hold creates a queued object suspended.
func (k Kind) Hold(obj client.Object) bool {
	u := obj.(*unstructured.Unstructured)
	if k.C.Suspended(u) {
		return false
	}
	_ = unstructured.SetNestedField(u.Object, true, k.C.Suspend...) // on a map under spec: cannot fail
	return true
}

// HeldFields is the top of the suspend path (spec): the webhook may have to
// make the fields on the way to it. An unstructured object loses nothing
// it was sent, so patching all of it takes nothing away.
func (k Kind) HeldFields(obj client.Object) []integration.Field {
	u := obj.(*unstructured.Unstructured)
	return []integration.Field{{Path: "/" + k.C.Suspend[0], Value: u.Object[k.C.Suspend[0]]}}
}

// Finished reports whether a configured condition is True, and whether it
// is one that says the object failed.
func (k Kind) Finished(obj client.Object) (finished, failed bool) {
	u := obj.(*unstructured.Unstructured)
	if f := k.C.FinishedField; f != nil {
		v, _, _ := unstructured.NestedFieldNoCopy(u.Object, f...)
		s, _ := v.(string)
		switch {
		case s == "":
			return false, false
		case slices.Contains(k.C.Spec.Finished.Failed, s):
			return true, true
		case slices.Contains(k.C.Spec.Finished.Succeeded, s):
			return true, false
		}
		return false, false
	}
	raw, found, err := unstructured.NestedSlice(u.Object, "status", "conditions")
	if err != nil || !found {
		return false, false
	}
	var conds []metav1.Condition
	for _, r := range raw {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		t, _ := m["type"].(string)
		s, _ := m["status"].(string)
		conds = append(conds, metav1.Condition{Type: t, Status: metav1.ConditionStatus(s)})
	}
	for _, t := range k.C.Spec.Finished.Failed {
		if meta.IsStatusConditionTrue(conds, t) {
			return true, true
		}
	}
	for _, t := range k.C.Spec.Finished.Succeeded {
		if meta.IsStatusConditionTrue(conds, t) {
			return true, false
		}
	}
	return false, false
}

// OriginalSchedulingAnnotation holds, while an object runs with its
// flavors' node selectors and tolerations, what each pod set's template
// had before, by pod set; it is put back when the object is suspended again.
const OriginalSchedulingAnnotation = "berth.dev/original-scheduling"

type scheduling struct {
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations  []corev1.Toleration `json:"tolerations,omitempty"`
	// Count is the pod set's count before Shrink, when it shrank it.
	Count *int64 `json:"count,omitempty"`
}

// Injected reports whether u's templates carry flavors' settings.
func Injected(u *unstructured.Unstructured) bool {
	_, ok := u.GetAnnotations()[OriginalSchedulingAnnotation]
	return ok
}

// Start adds to each pod set's template the node labels and tolerations of
// the flavors it was admitted in (flavors, by pod set) and the label of
// u's UID, keeping what each had, marks the templates of the pod sets
// placed by topology (slot.placed), and unsuspends u.
func (k Kind) Start(obj client.Object, flavors map[string][]*berthv1.ResourceFlavor) error {
	u := obj.(*unstructured.Unstructured)
	orig := map[string]scheduling{}
	slots, err := k.C.slots(u)
	if err != nil {
		return fmt.Errorf("%s %s: %w", k.C.Kind, u.GetName(), err)
	}
	for _, s := range slots {
		t, found, err := s.template()
		if err != nil {
			return fmt.Errorf("%s %s: %s: %w", k.C.Kind, u.GetName(), s.path(s.ps.Template), err)
		}
		if !found || s.defaulted() {
			continue // nowhere to write: its pods go where the scheduler puts them
		}
		// Cloned: InjectFlavors adds to the map in place.
		orig[s.name] = scheduling{NodeSelector: maps.Clone(t.Spec.NodeSelector), Tolerations: slices.Clone(t.Spec.Tolerations)}
		integration.InjectFlavors(&t.Spec, flavors[s.name])
		if err := s.setScheduling(scheduling{NodeSelector: t.Spec.NodeSelector, Tolerations: t.Spec.Tolerations}); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(s.in, string(u.GetUID()), append(append(Path{}, s.ps.Template...), "metadata", "labels", berthv1.OwnerUIDLabel)...); err != nil {
			return fmt.Errorf("%s %s: %s.metadata.labels: %w", k.C.Kind, u.GetName(), s.path(s.ps.Template), err)
		}
		req, err := s.topology(k.C, t)
		if err != nil {
			return fmt.Errorf("%s %s: %w", k.C.Kind, u.GetName(), err)
		}
		// Admitted, a pod set that asks for placement was placed: no
		// flavor without a topology admits it.
		if err := s.placed(req != nil); err != nil {
			return fmt.Errorf("%s %s: %w", k.C.Kind, u.GetName(), err)
		}
	}
	if !Injected(u) {
		data, err := json.Marshal(orig)
		if err != nil {
			return err
		}
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[OriginalSchedulingAnnotation] = string(data)
		u.SetAnnotations(ann)
	}
	return unstructured.SetNestedField(u.Object, false, k.C.Suspend...)
}

// setScheduling writes a template's node selector and tolerations, and
// nothing else of it: fields berth's copy of the pod type does not know
// stay as they are.
func (s slot) setScheduling(sch scheduling) error {
	spec := append(append(Path{}, s.ps.Template...), "spec")
	for name, v := range map[string]any{"nodeSelector": sch.NodeSelector, "tolerations": sch.Tolerations} {
		at := append(append(Path{}, spec...), name)
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		var plain any
		if err := json.Unmarshal(data, &plain); err != nil {
			return err
		}
		if plain == nil {
			unstructured.RemoveNestedField(s.in, at...)
			continue
		}
		if err := unstructured.SetNestedField(s.in, runtime.DeepCopyJSONValue(plain), at...); err != nil {
			return fmt.Errorf("%s: %w", s.path(Path(at)), err)
		}
	}
	return nil
}

// Shrink runs each pod set admitted with fewer pods than it asked for
// (partial admission) with that many: its count is set to them, and its
// own kept for Restore. Start must have run.
func (k Kind) Shrink(obj client.Object, admitted func(podSet string) int32) error {
	u := obj.(*unstructured.Unstructured)
	slots, err := k.C.slots(u)
	if err != nil {
		return fmt.Errorf("%s %s: %w", k.C.Kind, u.GetName(), err)
	}
	var orig map[string]scheduling
	if err := json.Unmarshal([]byte(u.GetAnnotations()[OriginalSchedulingAnnotation]), &orig); err != nil {
		return fmt.Errorf("annotation %s of %s %s/%s is not valid: %w", OriginalSchedulingAnnotation, k.C.Kind, u.GetNamespace(), u.GetName(), err)
	}
	shrunk := false
	for _, s := range slots {
		n, err := s.count()
		if err != nil {
			return err
		}
		a := admitted(s.name)
		if a <= 0 || a >= n || s.ps.Count == nil {
			continue
		}
		own, found, err := s.integer(s.ps.Count)
		if err != nil || !found {
			return fmt.Errorf("%s %s: %s: admitted with %d of %d pods, but the count cannot be set: %v", k.C.Kind, u.GetName(), s.path(s.ps.Count), a, n, err)
		}
		o := orig[s.name]
		o.Count = &own
		if orig == nil {
			orig = map[string]scheduling{}
		}
		orig[s.name] = o
		if err := unstructured.SetNestedField(s.in, int64(a), s.ps.Count...); err != nil {
			return fmt.Errorf("%s %s: %s: %w", k.C.Kind, u.GetName(), s.path(s.ps.Count), err)
		}
		shrunk = true
	}
	if !shrunk {
		return nil
	}
	data, err := json.Marshal(orig)
	if err != nil {
		return err
	}
	ann := u.GetAnnotations()
	ann[OriginalSchedulingAnnotation] = string(data)
	u.SetAnnotations(ann)
	return nil
}

// Restore puts back the node selectors and tolerations the templates had
// before Start. It reports whether it changed u; a damaged annotation is an
// error naming it, and u is left as it is.
func (k Kind) Restore(u *unstructured.Unstructured) (bool, error) {
	data, ok := u.GetAnnotations()[OriginalSchedulingAnnotation]
	if !ok {
		return false, nil
	}
	var orig map[string]scheduling
	if err := json.Unmarshal([]byte(data), &orig); err != nil {
		return false, fmt.Errorf("annotation %s of %s %s/%s is not valid: %w", OriginalSchedulingAnnotation, k.C.Kind, u.GetNamespace(), u.GetName(), err)
	}
	slots, err := k.C.slots(u)
	if err != nil {
		return false, fmt.Errorf("%s %s/%s: %w", k.C.Kind, u.GetNamespace(), u.GetName(), err)
	}
	for _, s := range slots {
		o, ok := orig[s.name]
		if !ok {
			continue
		}
		if o.Count != nil {
			if err := unstructured.SetNestedField(s.in, *o.Count, s.ps.Count...); err != nil {
				return false, fmt.Errorf("%s: %w", s.path(s.ps.Count), err)
			}
		}
		if _, found, _ := unstructured.NestedMap(s.in, s.ps.Template...); !found {
			continue
		}
		if err := s.setScheduling(o); err != nil {
			return false, err
		}
	}
	ann := u.GetAnnotations()
	delete(ann, OriginalSchedulingAnnotation)
	u.SetAnnotations(ann)
	return true, nil
}

// Pods selects u's pods: the label Start puts on its templates.
func Pods(u *unstructured.Unstructured) labels.Set {
	return labels.Set{berthv1.OwnerUIDLabel: string(u.GetUID())}
}

// Reshaped reports whether u asks for other pods than its Workload was
// made for (pods, its pod sets): an admitted object suspended and changed
// by its user must queue again with its new shape, not start as it is.
// Flavors' settings berth put on are left out of the comparison.
func (k Kind) Reshaped(u *unstructured.Unstructured, pods []berthv1.PodSet) bool {
	own := u.DeepCopy()
	if _, err := k.Restore(own); err != nil {
		return true
	}
	now, err := k.C.ReadPodSets(own)
	return err != nil || !equality.Semantic.DeepEqual(now, pods)
}

// PriorityClass is the pod priority class the Workload falls back on: the
// first pod set's template's.
func (k Kind) PriorityClass(u *unstructured.Unstructured) string {
	slots, _ := k.C.slots(u)
	for _, s := range slots {
		if t, found, err := s.template(); found && err == nil {
			return t.Spec.PriorityClassName
		}
	}
	return ""
}

// WorkloadName is the name of u's Workload.
func (k Kind) WorkloadName(u *unstructured.Unstructured) string {
	return WorkloadNameFor(k.C.Kind, u.GetName(), u.GetUID())
}

// WorkloadNameFor is the name of the Workload of the object of a
// configured kind named name, with uid.
func WorkloadNameFor(kind, name string, uid types.UID) string {
	return integration.WorkloadName(strings.ToLower(kind), name, uid)
}

// PodWorkload names the Workload of a configured kind's pod: one that
// carries berth.dev/owner-uid with the UID of its controller, found false
// for any other.
func PodWorkload(pod client.Object) (string, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.UID == "" || pod.GetLabels()[berthv1.OwnerUIDLabel] != string(ref.UID) {
		return "", false
	}
	return WorkloadNameFor(ref.Kind, ref.Name, ref.UID), true
}

// NewWorkload makes u's Workload, owned by u, keeping its quota until
// u's pods are gone.
func (k Kind) NewWorkload(u *unstructured.Unstructured, pods []berthv1.PodSet, queue string, priority *int32, priorityClass string) *berthv1.Workload {
	wl := integration.NewWorkload(u, k.C.GVK, k.WorkloadName(u), map[string]string{berthv1.ConfiguredKindLabel: "true"},
		berthv1.WorkloadSpec{PodSets: pods, QueueName: queue, Priority: priority, PriorityClassName: priorityClass})
	integration.FollowPods(wl, Pods(u))
	return wl
}

// Stopped reports whether none of an object's pods runs any more: each has
// ended (a pod being deleted still holds its node until it has).
func Stopped(pods []corev1.Pod) bool {
	for i := range pods {
		if p := pods[i].Status.Phase; p != corev1.PodSucceeded && p != corev1.PodFailed {
			return false
		}
	}
	return true
}

// InSync reports whether a pending Workload still describes its object:
// its pod sets, queue and priority.
func InSync(wl *berthv1.Workload, pods []berthv1.PodSet, queue string, priority *int32) bool {
	return wl.Spec.QueueName == queue && equality.Semantic.DeepEqual(wl.Spec.Priority, priority) &&
		equality.Semantic.DeepEqual(wl.Spec.PodSets, pods)
}

// ScaleRefusal says why a scale of u (through its scale subresource, from
// from to to pods) may not be let through, or "": the API server's
// policies see only the Scale, not the object, so berth's webhook decides.
// Scaling up a queued object that runs would start pods past its
// admission; while it is suspended it queues again with its new size.
func (k Kind) ScaleRefusal(u *unstructured.Unstructured, from, to int32) string {
	if to <= from || k.QueueName(u) == "" || k.C.Suspended(u) {
		return ""
	}
	return fmt.Sprintf("%s %s: a queued %s is scaled up (from %d to %d) only while it is suspended (%s: true), to queue again with its new size",
		k.C.Kind, u.GetName(), k.C.Kind, from, to, k.C.Suspend)
}

// PodsReady reports whether the pods of an admission of want pods are all
// Ready (or have succeeded) at once, and says how many are.
func PodsReady(pods []corev1.Pod, want int32) (bool, string) {
	var ready int32
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Status.Phase == corev1.PodSucceeded {
			ready++
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready >= want, fmt.Sprintf("%d of %d pods Ready or succeeded", ready, want)
}
