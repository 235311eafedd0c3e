package guard

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// Kind describes one kind berth queues, as its policy needs it.
type Kind struct {
	// Name is the kind's name in refusals: "Job".
	Name string
	// Group, Version and Resource say where the API server serves it.
	Group, Version, Resource string
	// Suspend is the path of the boolean field that holds the whole object
	// back while true ("spec.suspend"); "" for a kind never held as a whole
	// (its pods are, each), whose queue therefore never changes.
	Suspend string
	// Gates are the scheduling gates of the kind (a Pod's) that only berth
	// lifts.
	Gates []string
	// Labels and Annotations are those only berth changes, besides the
	// queue's and the priority class's.
	Labels, Annotations []string
	// PodsAtOnce is a CEL expression of o, an object of the kind: how many
	// pods it runs at once, for a kind whose updates may raise it (a Job's
	// parallelism); "" for none.
	PodsAtOnce string
	// Fixed are paths of fields that say what pods the kind runs (a pod
	// template, a count), for a kind whose API lets them change at any time:
	// they change only in an update that leaves the object held back, since
	// its pods would otherwise start as they now ask, past what was admitted.
	Fixed []string
	// Immutable are paths of fields that do not change on a queued object,
	// held or not: what berth does not follow for the kind, refused when an
	// object is queued, so that it is not turned on later.
	Immutable []string
	// Qualified names the kind's policies by group too: a kind queued from
	// configuration.
	Qualified bool
	// Resize says the kind has the resize subresource (a Pod's requests
	// changed in place), which a queued object may not use.
	Resize bool
	// Children are the objects the kind's controller makes and finds again
	// (a Job's Pods, a JobSet's Jobs).
	Children []Child
}

// Child is a kind of object another kind's controller makes, and finds
// again by its controller reference and some labels. One that is no longer
// found (its labels changed, its owner reference moved) keeps running, and
// the controller makes another in its place: more pods than were admitted.
// So, for every object of the child kind whose controller is of the owning
// kind, queued or not (the owner's queue is not in sight), those labels do
// not change and the controller reference is only taken away by the garbage
// collector (an owner deleted with --cascade=orphan).
type Child struct {
	Name, Group, Version, Resource string
	// Labels are those the controller finds its children by.
	Labels []string
	// Kept are labels a child keeps as it was made with them, for another
	// reason: its owner's queue label on a child queued with its owner (a
	// RayJob's RayCluster), which keeps it under the child kind's own policy.
	Kept []string
	// Suspend and PodsAtOnce, as Kind's, for children held back as their
	// owner is (a JobSet's Jobs, suspended with it): only the owner's
	// controller (Options.Controllers) or berth starts them, or makes them
	// run more pods at once, even while held: the owner's controller starts
	// them as they are, and berth admitted the owner's own shape.
	Suspend, PodsAtOnce string
}

// garbageCollectors are the user names kube-controller-manager's garbage
// collector acts as: its own ServiceAccount's, or the manager's own when it
// runs without per-controller credentials.
var garbageCollectors = []string{"system:serviceaccount:kube-system:generic-garbage-collector", "system:kube-controller-manager"}

// Kinds are the kinds berth queues.
var Kinds = []Kind{
	{
		Name: "Job", Group: "batch", Version: "v1", Resource: "jobs", Suspend: "spec.suspend",
		Labels:     append([]string{berthv1.PrebuiltWorkloadLabel, berthv1.MultiClusterOriginLabel}, maxExecTime...),
		PodsAtOnce: jobPodsAtOnce,
		// The Job controller finds its Pods by these (its selector), and
		// adopts those without a controller that match them; berth finds a
		// Job's, or a JobSet's, pods by the UID labels when it holds their
		// quota until they are gone (package podsgone).
		Children: []Child{{Name: "Pod", Group: "", Version: "v1", Resource: "pods",
			Labels: []string{"batch.kubernetes.io/controller-uid", "controller-uid", "batch.kubernetes.io/job-name", "job-name",
				"jobset.sigs.k8s.io/jobset-uid"}}},
	},
	{
		Name: "JobSet", Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets", Suspend: "spec.suspend",
		Labels: append([]string{berthv1.PrebuiltWorkloadLabel, berthv1.MultiClusterOriginLabel}, maxExecTime...),
		// The JobSet controller finds its Jobs by their controller
		// reference, berth by the JobSet's UID label. They carry no queue
		// label: held with their JobSet, they are started by its
		// controller alone.
		Children: []Child{{Name: "Job", Group: "batch", Version: "v1", Resource: "jobs",
			Labels:  []string{"jobset.sigs.k8s.io/jobset-uid", "jobset.sigs.k8s.io/jobset-name", "jobset.sigs.k8s.io/replicatedjob-name", "jobset.sigs.k8s.io/job-index"},
			Suspend: "spec.suspend", PodsAtOnce: jobPodsAtOnce}},
	},
	{
		Name: "Pod", Group: "", Version: "v1", Resource: "pods",
		Gates:       []string{berthv1.AdmissionGate, berthv1.TopologyGate},
		Labels:      append([]string{berthv1.PodGroupNameLabel, berthv1.KueuePodGroupNameLabel, berthv1.PrebuiltWorkloadLabel}, maxExecTime...),
		Annotations: []string{berthv1.PodGroupTotalCountAnnotation, berthv1.KueuePodGroupTotalCountAnnotation},
		Resize:      true,
	},
	{
		Name: "TrainJob", Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs", Suspend: "spec.suspend",
		Labels: maxExecTime,
		// What Trainer makes its JobSet from: changed as berth lets the
		// TrainJob go, Trainer would start the JobSet as they now say.
		Fixed: []string{"spec.runtimeRef", "spec.initializer", "spec.trainer", "spec.podTemplateOverrides"},
		// Trainer makes a TrainJob's JobSet, suspended with it, and finds
		// it by name and controller reference; only Trainer starts it.
		Children: []Child{{Name: "JobSet", Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets", Suspend: "spec.suspend"}},
	},
	{Name: "Deployment", Group: "apps", Version: "v1", Resource: "deployments"},
	{Name: "StatefulSet", Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Name: "LeaderWorkerSet", Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"},
}

// maxExecTime are the labels whose run-time limit a Workload takes when it
// is made: changed later, they would say what berth does not do.
var maxExecTime = []string{berthv1.MaxExecTimeLabel, berthv1.KueueMaxExecTimeLabel}

// jobPodsAtOnce is how many pods a Job runs at once: its parallelism (1
// when unset), or its completions when fewer.
const jobPodsAtOnce = `(has(o.spec.completions) && o.spec.completions < (has(o.spec.parallelism) ? o.spec.parallelism : 1)) ?
  o.spec.completions : (has(o.spec.parallelism) ? o.spec.parallelism : 1)`

// Options say who berth is and where it runs.
type Options struct {
	// Identity is the user name berth's controller authenticates as: the
	// only one the policies let through.
	Identity string
	// Namespace is berth's own; like kube-system, it is not guarded (nothing
	// there is queued).
	Namespace string
	// Controllers are, by the Name of a Kind, the user names its own
	// controller acts as (the JobSet controller's): they start the Kind's
	// held children (Child.Suspend) when berth starts the Kind.
	Controllers map[string][]string
}

// PolicyName is the name of kind's policy, and of its binding.
func PolicyName(k Kind) string { return k.id() + ".guard.berth.dev" }

// id names kind in its policies' names: its resource, and its group for a
// kind queued from configuration (Qualified), whose resource could be a
// built-in one's.
func (k Kind) id() string {
	if k.Qualified {
		return k.Resource + "." + k.Group
	}
	return k.Resource
}

// Policies are the ValidatingAdmissionPolicies of kinds and of their
// children, each followed by the binding that makes it refuse.
func Policies(o Options, kinds []Kind) []client.Object {
	var out []client.Object
	for _, k := range kinds {
		p, b := Policy(o, k)
		out = append(out, p, b)
		for _, c := range k.Children {
			p, b := ChildPolicy(o, k, c)
			out = append(out, p, b)
		}
	}
	return out
}

// All are the policies of Kinds and KeptTemplates: what berth up and the
// chart install.
func All(o Options) []client.Object {
	p, b := KeptTemplates(o)
	return append(Policies(o, Kinds), p, b)
}

// KeptTemplates is the policy by which nobody but berth takes its
// finalizer off a ResourceClaimTemplate (berthv1.DevicesCountedFinalizer):
// a workload's devices were counted from the template, and with the
// finalizer gone it could be deleted and made again asking for more.
func KeptTemplates(o Options) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	fin := quote(berthv1.DevicesCountedFinalizer)
	p, b := policy(o, "resourceclaimtemplates.guard.berth.dev", "resource.k8s.io", "v1", []string{"resourceclaimtemplates"},
		"has(oldObject.metadata.finalizers) && "+fin+" in oldObject.metadata.finalizers")
	forbidden := metav1.StatusReasonForbidden
	p.Spec.Validations = []admissionregistrationv1.Validation{{
		Expression: "has(object.metadata.finalizers) && " + fin + " in object.metadata.finalizers",
		MessageExpression: quote("ResourceClaimTemplate ") + " + object.metadata.name + " + quote(": metadata.finalizers: "+berthv1.DevicesCountedFinalizer+
			" is berth's to take off, once no workload whose devices were counted from this template may make pods"),
		Reason: &forbidden,
	}}
	return p, b
}

// ChildPolicyName is the name of the policy that guards kind's children.
func ChildPolicyName(k Kind, c Child) string {
	return c.Resource + "-of-" + k.id() + ".guard.berth.dev"
}

// ChildPolicy is the policy that keeps kind's children (c) found by its
// controller, and its binding.
func ChildPolicy(o Options, k Kind, c Child) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	p, b := policy(o, ChildPolicyName(k, c), c.Group, c.Version, []string{c.Resource},
		controlledBy("object", k)+" || "+controlledBy("oldObject", k))
	p.Spec.Variables = []admissionregistrationv1.Variable{
		{Name: "oldController", Expression: controllers("oldObject")},
		{Name: "newController", Expression: controllers("object")},
	}
	forbidden := metav1.StatusReasonForbidden
	who := quote(c.Name+" ") + " + object.metadata.name + " + quote(": ")
	gc := make([]string, len(garbageCollectors))
	for i, n := range garbageCollectors {
		gc[i] = quote(n)
	}
	p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{
		Expression: "variables.oldController == variables.newController || (size(variables.newController) == 0 && request.userInfo.username in [" +
			strings.Join(gc, ", ") + "])",
		MessageExpression: strings.ReplaceAll(who+" + "+quote("metadata.ownerReferences: the controller of a "+k.Name+"'s "+c.Name+
			" may not change: the "+k.Name+" would make another in its place"), "' + '", ""),
		Reason: &forbidden,
	})
	for _, l := range c.Labels {
		p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{
			Expression: value("oldObject", "labels", l) + " == " + value("object", "labels", l),
			MessageExpression: strings.ReplaceAll(who+" + "+quote("metadata.labels["+l+"]: the "+k.Name+" finds its "+c.Name+
				"s by it; changed, the "+k.Name+" would make another in its place"), "' + '", ""),
			Reason: &forbidden,
		})
	}
	for _, l := range c.Kept {
		p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{
			Expression: value("oldObject", "labels", l) + " == " + value("object", "labels", l),
			MessageExpression: strings.ReplaceAll(who+" + "+quote("metadata.labels["+l+"]: a "+k.Name+"'s "+c.Name+" keeps the label it was made with: "+
				"it is queued with its "+k.Name+", and without the label it could grow unqueued"), "' + '", ""),
			Reason: &forbidden,
		})
	}
	ctrls := make([]string, len(o.Controllers[k.Name]))
	for i, n := range o.Controllers[k.Name] {
		ctrls[i] = quote(n)
	}
	owners := "request.userInfo.username in [" + strings.Join(ctrls, ", ") + "]"
	if c.Suspend != "" {
		p.Spec.Variables = append(p.Spec.Variables,
			admissionregistrationv1.Variable{Name: "oldHeld", Expression: isTrue("oldObject", c.Suspend)},
			admissionregistrationv1.Variable{Name: "newHeld", Expression: isTrue("object", c.Suspend)})
		p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{
			Expression: "!variables.oldHeld || variables.newHeld || " + owners,
			MessageExpression: strings.ReplaceAll(who+" + "+quote(c.Suspend+": a "+k.Name+"'s "+c.Name+" is started by the "+k.Name+
				"'s controller, with its "+k.Name+", once berth admits it; nobody else may set "+c.Suspend+" to false"), "' + '", ""),
			Reason: &forbidden,
		})
	}
	if c.PodsAtOnce != "" {
		p.Spec.Variables = append(p.Spec.Variables,
			admissionregistrationv1.Variable{Name: "oldPods", Expression: of(c.PodsAtOnce, "oldObject")},
			admissionregistrationv1.Variable{Name: "newPods", Expression: of(c.PodsAtOnce, "object")})
		p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{
			Expression: "variables.newPods <= variables.oldPods || " + owners,
			MessageExpression: strings.ReplaceAll(who+" + "+quote("a "+k.Name+"'s "+c.Name+" may not run more pods at once (from ")+
				" + string(variables.oldPods) + "+quote(" to ")+" + string(variables.newPods) + "+
				quote("): berth admitted its "+k.Name+" for what it asked; change the "+k.Name+" instead"), "' + '", ""),
			Reason: &forbidden,
		})
	}
	return p, b
}

// controlledBy is true when o's controller is of kind k.
func controlledBy(o string, k Kind) string {
	prefix := k.Group + "/"
	if k.Group == "" {
		prefix = ""
	}
	return fmt.Sprintf("has(%s.metadata.ownerReferences) && %s.metadata.ownerReferences.exists(r, has(r.controller) && r.controller && r.kind == %s && r.apiVersion.startsWith(%s))",
		o, o, quote(k.Name), quote(prefix))
}

// controllers are the UIDs of o's controller references (one at most).
func controllers(o string) string {
	return fmt.Sprintf("has(%s.metadata.ownerReferences) ? %s.metadata.ownerReferences.filter(r, has(r.controller) && r.controller).map(r, r.uid) : []", o, o)
}

// policy is a policy of name on UPDATEs of resources of group/version that
// match, by anyone but berth, outside kube-system and berth's namespace,
// failing closed, and its binding; its rules are the caller's to add.
func policy(o Options, name, group, version string, resources []string, match string) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionregistrationv1.Fail
	meta := metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "berth"}}
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: meta,
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: resources},
				}}},
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn,
					Values: []string{"kube-system", o.Namespace},
				}}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{Name: "guarded", Expression: match},
				{Name: "not-berth", Expression: "request.userInfo.username != " + quote(o.Identity)},
			},
		},
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: *meta.DeepCopy(),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return p, b
}

// Policy is kind's ValidatingAdmissionPolicy and its binding.
func Policy(o Options, k Kind) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	resources := []string{k.Resource}
	if k.Resize {
		resources = append(resources, k.Resource+"/resize")
	}
	p, b := policy(o, PolicyName(k), k.Group, k.Version, resources, queued("object")+" || "+queued("oldObject"))
	p.Spec.Variables = Variables(k)
	p.Spec.Validations = Validations(k)
	return p, b
}

// Variables are what the validations of kind read of the old and the new
// object: queue, priority class, whether it is held back, pods at once.
func Variables(k Kind) []admissionregistrationv1.Variable {
	vars := []admissionregistrationv1.Variable{
		{Name: "oldQueue", Expression: either("oldObject", berthv1.QueueNameLabel, berthv1.KueueQueueNameLabel)},
		{Name: "newQueue", Expression: either("object", berthv1.QueueNameLabel, berthv1.KueueQueueNameLabel)},
		{Name: "oldClass", Expression: either("oldObject", berthv1.PriorityClassLabel, berthv1.KueuePriorityClassLabel)},
		{Name: "newClass", Expression: either("object", berthv1.PriorityClassLabel, berthv1.KueuePriorityClassLabel)},
	}
	if k.Suspend != "" {
		vars = append(vars,
			admissionregistrationv1.Variable{Name: "oldHeld", Expression: isTrue("oldObject", k.Suspend)},
			admissionregistrationv1.Variable{Name: "newHeld", Expression: isTrue("object", k.Suspend)})
	}
	if k.PodsAtOnce != "" {
		vars = append(vars,
			admissionregistrationv1.Variable{Name: "oldPods", Expression: of(k.PodsAtOnce, "oldObject")},
			admissionregistrationv1.Variable{Name: "newPods", Expression: of(k.PodsAtOnce, "object")})
	}
	return vars
}

// Validations are kind's rules, each refusing with a message that names the
// object and the field.
func Validations(k Kind) []admissionregistrationv1.Validation {
	forbidden := metav1.StatusReasonForbidden
	who := quote(k.Name+" ") + " + object.metadata.name + " + quote(": ")
	rule := func(expr, msg string) admissionregistrationv1.Validation {
		// Literals next to each other are one: easier to read in the policy.
		joined := strings.ReplaceAll(who+" + "+msg, "' + '", "")
		return admissionregistrationv1.Validation{Expression: expr, MessageExpression: joined, Reason: &forbidden}
	}
	var out []admissionregistrationv1.Validation
	labelRule := func(label, oldVar, newVar, what string) {
		was := "'\"' + variables." + oldVar + " + '\"'"
		now := "'\"' + variables." + newVar + " + '\"'"
		if k.Suspend == "" {
			out = append(out, rule("variables."+oldVar+" == variables."+newVar,
				quote("metadata.labels["+label+"]: the "+what+" of a queued "+k.Name+" may not change (from ")+" + "+was+" + "+quote(" to ")+" + "+now+
					" + "+quote("); delete the "+k.Name+" and create it again to queue it elsewhere")))
			return
		}
		// Suspended by the update that moves it, or before: berth's
		// Workload then gives its quota back once the pods are gone. One
		// write is what a user can rely on, since berth starts a Job
		// suspended while admitted again.
		out = append(out, rule("variables."+oldVar+" == variables."+newVar+" || variables.newHeld",
			quote("metadata.labels["+label+"]: the "+what+" of a queued "+k.Name+" may change only in an update that leaves it suspended ("+k.Suspend+": true) (from ")+
				" + "+was+" + "+quote(" to ")+" + "+now+" + "+quote(")")))
	}
	labelRule(berthv1.QueueNameLabel, "oldQueue", "newQueue", "queue")
	labelRule(berthv1.PriorityClassLabel, "oldClass", "newClass", "priority class")
	if k.Suspend != "" {
		out = append(out, rule("!variables.oldHeld || variables.newHeld",
			quote(k.Suspend+": a queued "+k.Name+" is started by berth once its Workload is admitted; nobody else may set "+k.Suspend+" to false")))
	}
	for _, g := range k.Gates {
		out = append(out, rule("!("+gated("oldObject", g)+") || "+gated("object", g),
			quote("spec.schedulingGates: the gate "+g+" of a queued "+k.Name+" is lifted by berth once it is admitted; nobody else may remove it")))
	}
	for _, l := range k.Labels {
		out = append(out, rule(value("oldObject", "labels", l)+" == "+value("object", "labels", l),
			quote("metadata.labels["+l+"]: may not change on a queued "+k.Name)))
	}
	for _, a := range k.Annotations {
		out = append(out, rule(value("oldObject", "annotations", a)+" == "+value("object", "annotations", a),
			quote("metadata.annotations["+a+"]: may not change on a queued "+k.Name)))
	}
	if k.PodsAtOnce != "" {
		held := "false"
		if k.Suspend != "" {
			held = "variables.newHeld"
		}
		out = append(out, rule("variables.newPods <= variables.oldPods || "+held,
			quote("a queued "+k.Name+" may not run more pods at once (from ")+" + string(variables.oldPods) + "+quote(" to ")+
				" + string(variables.newPods) + "+quote(") unless it is suspended in the same update, to queue again with its new size")))
	}
	for _, path := range k.Fixed {
		out = append(out, rule(unchanged(path)+" || variables.newHeld",
			quote(path+": may change on a queued "+k.Name+" only in an update that leaves it suspended ("+k.Suspend+": true), to queue again with its new pods")))
	}
	for _, path := range k.Immutable {
		out = append(out, rule(unchanged(path),
			quote(path+": may not change on a queued "+k.Name+": berth does not follow it yet")))
	}
	if k.Resize {
		// subResource is absent from the request, not "", for the object itself.
		out = append(out, rule("!has(request.subResource) || request.subResource != 'resize'",
			quote("spec.containers[*].resources: a queued "+k.Name+" may not be resized in place: its quota was reserved for what it asked when created; "+
				"create it again with the new requests")))
	}
	return out
}

// queued is true of an object (o names it) that carries a queue label.
func queued(o string) string {
	return fmt.Sprintf("has(%s.metadata.labels) && (%s in %s.metadata.labels || %s in %s.metadata.labels)",
		o, quote(berthv1.QueueNameLabel), o, quote(berthv1.KueueQueueNameLabel), o)
}

// value is the label (or annotation: field) key of o, "" when it has none.
func value(o, field, key string) string {
	return fmt.Sprintf("(has(%s.metadata.%s) && %s in %s.metadata.%s ? %s.metadata.%s[%s] : '')", o, field, quote(key), o, field, o, field, quote(key))
}

// either is o's label first, else its label second, else "": berth's label
// wins over Kueue's, as integration.QueueName reads them.
func either(o, first, second string) string {
	return fmt.Sprintf("%s != '' ? %s : %s", value(o, "labels", first), value(o, "labels", first), value(o, "labels", second))
}

// isTrue is true when the boolean at path of o is there and true; each
// step of the path may be missing.
func isTrue(o, path string) string {
	return present(o, path) + " && " + o + "." + path + " == true"
}

// unchanged is true when the field at path is the same in the old object
// and the new, or absent from both; each step of the path may be missing.
func unchanged(path string) string {
	return fmt.Sprintf("(%s) == (%s) && (!(%s) || oldObject.%s == object.%s)",
		present("oldObject", path), present("object", path), present("object", path), path, path)
}

// present is true when every step of path is there in o.
func present(o, path string) string {
	var conds []string
	at := o
	for _, part := range strings.Split(path, ".") {
		at += "." + part
		conds = append(conds, "has("+at+")")
	}
	return strings.Join(conds, " && ")
}

// gated is true when o has the scheduling gate g.
func gated(o, g string) string {
	return fmt.Sprintf("has(%s.spec.schedulingGates) && %s.spec.schedulingGates.exists(g, g.name == %s)", o, o, quote(g))
}

// of puts o for the object in an expression written of "o.".
func of(expr, o string) string {
	return strings.NewReplacer("o.spec", o+".spec", "o.metadata", o+".metadata").Replace(expr)
}

// quote is s as a CEL string literal.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
