// Package sim is the cluster simulator: it plays the kubelets of fake nodes,
// driven by KWOK-format stages, so batch scheduling can be exercised on
// thousands of nodes with no machines.
//
// It manages only the nodes its node selector picks (by default those
// labelled berth.dev/sim-node=true) and the pods bound to them, and every
// object of any other kind a stage names (PersistentVolumeClaims, say),
// watched through discovery and left to the stages' selectors. For every
// version of such an object it sees, the stage engine (package stage) picks
// the stage that applies, and the delay queue (package delayqueue) holds it
// until it is due; a worker then checks the stage against the newest copy of
// the object, renders it, applies it to a local copy to drop the writes that
// would change nothing, and makes the rest. Node health goes through Leases
// in kube-node-lease, renewed like a kubelet's, not through status writes.
//
// Stages come from berth's defaults, then stage files, then Stage objects in
// the cluster (when the kwok.x-k8s.io Stage CRD is installed); a stage
// replaces an earlier one of the same name.
package sim

// What a kubelet-like simulator needs (config/sim/rbac is generated from this).
// Impersonation is only used by stages that ask to patch as another user.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=kube-node-lease
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=kwok.x-k8s.io,resources=stages,verbs=get;list;watch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceslices,verbs=list;create;update;delete
// +kubebuilder:rbac:groups="",resources=users;groups;serviceaccounts,verbs=impersonate
// The volume stages (examples/stages/volume) provision and bind claims;
// stages of other kinds need their own grants.
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumes/status,verbs=patch
