package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is kwok.x-k8s.io/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: "kwok.x-k8s.io", Version: "v1alpha1"}

var schemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Stage{}, &StageList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
})

// AddToScheme registers the Stage types.
var AddToScheme = schemeBuilder.AddToScheme

// Stage is one step of a simulated lifecycle: when an object of the given
// kind matches the selector, after the delay, do what next says.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
type Stage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StageSpec   `json:"spec"`
	Status StageStatus `json:"status,omitempty"`
}

// StageList is a list of Stages.
// +kubebuilder:object:root=true
type StageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Stage `json:"items"`
}

// StageStatus reports problems with a stage.
type StageStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// StageSpec says which objects a stage applies to, when, and what it does.
type StageSpec struct {
	// ResourceRef is the kind of object the stage applies to.
	ResourceRef StageResourceRef `json:"resourceRef"`
	// Selector picks the objects of the kind: empty matches all, unset
	// matches none (as in KWOK).
	// +optional
	Selector *StageSelector `json:"selector,omitempty"`
	// Weight: among stages that match the same object, one is picked at
	// random in proportion to the weights.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Weight int `json:"weight,omitempty"`
	// WeightFrom takes the weight from the object (a number, or a string
	// holding one); Weight is used when it yields nothing.
	// +optional
	WeightFrom *ExpressionFromSource `json:"weightFrom,omitempty"`
	// Delay before next is applied.
	// +optional
	Delay *StageDelay `json:"delay,omitempty"`
	// Next is what the stage does to the object (KWOK's older form; Steps
	// is its current one).
	// +optional
	Next StageNext `json:"next,omitempty"`
	// Steps are what the stage does, in order, after anything in next.
	// +optional
	Steps []StageStep `json:"steps,omitempty"`
	// ImmediateNextStage matches the object against the stages again right
	// after this one is applied, instead of waiting for the API server's event.
	// +optional
	ImmediateNextStage *bool `json:"immediateNextStage,omitempty"`
}

// StageResourceRef names a kind: apiGroup is "v1" for core kinds, else group/version.
type StageResourceRef struct {
	// +optional
	// +kubebuilder:default=v1
	APIGroup string `json:"apiGroup,omitempty"`
	Kind     string `json:"kind"`
}

// StageSelector is matchLabels, matchAnnotations and matchExpressions, all ANDed.
type StageSelector struct {
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	// +optional
	MatchAnnotations map[string]string `json:"matchAnnotations,omitempty"`
	// +optional
	MatchExpressions []SelectorRequirement `json:"matchExpressions,omitempty"`
}

// SelectorRequirement tests the object: either the values a JQ expression
// (Key) yields on it, with Operator and Values, or a CEL expression alone.
type SelectorRequirement struct {
	// Key is a JQ expression, such as '.status.phase'.
	// +optional
	Key string `json:"key,omitempty"`
	// Operator: In, NotIn, Exists or DoesNotExist.
	// +optional
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	Operator SelectorOperator `json:"operator,omitempty"`
	// +optional
	Values []string `json:"values,omitempty"`
	// CEL is a CEL expression on the object, named self, that must be true,
	// such as "self.status.phase != 'Bound'". An expression that fails on
	// the object (a field it lacks) does not match.
	// +optional
	CEL *CELExpression `json:"cel,omitempty"`
}

// CELExpression is a CEL expression.
type CELExpression struct {
	Expression string `json:"expression"`
}

// SelectorOperator relates a key's values to the requirement's values.
type SelectorOperator string

const (
	SelectorOpIn           SelectorOperator = "In"
	SelectorOpNotIn        SelectorOperator = "NotIn"
	SelectorOpExists       SelectorOperator = "Exists"
	SelectorOpDoesNotExist SelectorOperator = "DoesNotExist"
)

// StageDelay is DurationMilliseconds (or DurationFrom), plus a random jitter up
// to JitterDurationMilliseconds (or JitterDurationFrom) in all.
type StageDelay struct {
	// +optional
	// +kubebuilder:validation:Minimum=0
	DurationMilliseconds *int64 `json:"durationMilliseconds,omitempty"`
	// DurationFrom: a time (the delay lasts until then), a duration string
	// ("90s"), or a number of milliseconds, taken from the object.
	// +optional
	DurationFrom *ExpressionFromSource `json:"durationFrom,omitempty"`
	// JitterDurationMilliseconds: the delay is chosen uniformly between the
	// duration and this.
	// +optional
	// +kubebuilder:validation:Minimum=0
	JitterDurationMilliseconds *int64 `json:"jitterDurationMilliseconds,omitempty"`
	// +optional
	JitterDurationFrom *ExpressionFromSource `json:"jitterDurationFrom,omitempty"`
}

// ExpressionFromSource holds a JQ expression evaluated on the object.
type ExpressionFromSource struct {
	ExpressionFrom string `json:"expressionFrom,omitempty"`
}

// StageNext is what a stage does, in this order: finalizers, patches (and
// statusTemplate), event, steps, delete.
type StageNext struct {
	// +optional
	Event *StageEvent `json:"event,omitempty"`
	// +optional
	Finalizers *StageFinalizers `json:"finalizers,omitempty"`
	// +optional
	Delete bool `json:"delete,omitempty"`
	// Patches rendered from Go templates.
	// +optional
	Patches []StagePatch `json:"patches,omitempty"`
	// StatusTemplate renders the object's new status (kept for older stage
	// files; the same as a patch of the status subresource rooted at status).
	// +optional
	StatusTemplate string `json:"statusTemplate,omitempty"`
	// StatusSubresource for StatusTemplate; default status.
	// +optional
	StatusSubresource *string `json:"statusSubresource,omitempty"`
	// StatusPatchAs impersonates a user for the StatusTemplate patch.
	// +optional
	StatusPatchAs *ImpersonationConfig `json:"statusPatchAs,omitempty"`
	// Steps are more actions applied in order after the ones above (a berth
	// extension: one stage can patch, record an event and patch again).
	// +optional
	Steps []StageStep `json:"steps,omitempty"`
}

// StageStep is one step of steps (or next.steps): what is set in it is
// done in this order: finalizers, patch, patches, apply, event, delete.
type StageStep struct {
	// +optional
	Event *StageEvent `json:"event,omitempty"`
	// +optional
	Finalizers *StageFinalizers `json:"finalizers,omitempty"`
	// +optional
	Patch *StagePatch `json:"patch,omitempty"`
	// +optional
	Patches []StagePatch `json:"patches,omitempty"`
	// +optional
	Apply *StageApply `json:"apply,omitempty"`
	// +optional
	Delete bool `json:"delete,omitempty"`
}

// StageApply writes an object, which may be of another kind than the one
// the stage acts on (a PersistentVolume made for a claim, say): its
// template renders the whole object, with apiVersion, kind and name, from
// the stage's object. By default it is applied server-side (created or
// updated); with a patch type, the rendered object is that patch of the
// existing object it names.
type StageApply struct {
	// Template is a Go text/template rendered with the stage's object as its data.
	Template string `json:"template"`
	// Subresource to write, such as status.
	// +optional
	Subresource string `json:"subresource,omitempty"`
	// Type: json, merge or strategic, to patch rather than apply.
	// +optional
	// +kubebuilder:validation:Enum=json;merge;strategic
	Type *StagePatchType `json:"type,omitempty"`
	// +optional
	Impersonation *ImpersonationConfig `json:"impersonation,omitempty"`
}

// StageEvent is a Kubernetes event to record on the object.
type StageEvent struct {
	// Type: Normal or Warning.
	Type    string `json:"type,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// StageFinalizers changes metadata.finalizers.
type StageFinalizers struct {
	// +optional
	Add []FinalizerItem `json:"add,omitempty"`
	// +optional
	Remove []FinalizerItem `json:"remove,omitempty"`
	// +optional
	Empty bool `json:"empty,omitempty"`
}

// FinalizerItem is one finalizer.
type FinalizerItem struct {
	Value string `json:"value,omitempty"`
}

// StagePatch is a patch rendered from a Go template.
type StagePatch struct {
	// Subresource to patch, such as status; empty for the object itself.
	// +optional
	Subresource string `json:"subresource,omitempty"`
	// Root wraps the rendered value: with root status, the template renders
	// the status and the patch is {"status": ...}.
	// +optional
	Root string `json:"root,omitempty"`
	// Template is a Go text/template rendered with the object as its data.
	Template string `json:"template,omitempty"`
	// Type: json, merge or strategic (default: strategic for built-in kinds, merge otherwise).
	// +optional
	// +kubebuilder:validation:Enum=json;merge;strategic
	Type *StagePatchType `json:"type,omitempty"`
	// +optional
	Impersonation *ImpersonationConfig `json:"impersonation,omitempty"`
}

// StagePatchType is a patch format.
type StagePatchType string

const (
	StagePatchTypeJSONPatch           StagePatchType = "json"
	StagePatchTypeMergePatch          StagePatchType = "merge"
	StagePatchTypeStrategicMergePatch StagePatchType = "strategic"
)

// ImpersonationConfig names a user to act as.
type ImpersonationConfig struct {
	Username string `json:"username"`
}
