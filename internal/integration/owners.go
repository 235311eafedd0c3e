package integration

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Owned is a Kind whose objects may be made by an object of a kind berth
// queues, and are then queued with it, not on their own: a Job's Pods, a
// JobSet's Jobs. QueuingOwner is obj's controller reference when it is of
// such a kind, else nil.
//
// Anyone may write any owner reference into an object they create, so the
// Holder lets one count only when Owners vouch for it (Owners.Vouch).
type Owned interface {
	QueuingOwner(obj client.Object) *metav1.OwnerReference
}

// Owner is what Owners know of a kind of owner.
type Owner struct {
	// Controllers are the user names its controller acts as: only they
	// make the objects it owns.
	Controllers []string
	// New is an empty object of the kind.
	New func() client.Object
	// Queued says whether an object of the kind is queued by berth.
	Queued func(client.Object) bool
}

// Owners vouch for owner references, by the Kind name of the owner.
type Owners struct {
	Kinds map[string]Owner
	// Reader reads owners, from the cache; Live, from the API server, for
	// one the cache does not show (yet).
	Reader, Live client.Reader
}

// Found is what Owners found of an owner reference's object.
type Found struct {
	// Exists: an object of its kind, name and UID.
	Exists bool
	// Queued: berth queues it.
	Queued bool
}

// Judge says why obj (of kind what), created by user, may not be created
// with ref as its controller, or "": only the owner's controller makes such
// objects, and only for an owner that exists and that berth queues (so the
// object is queued with it). Otherwise the object would run unqueued, its
// owner's admission never covering it. kinds are the Owners' Kinds.
func Judge(kinds map[string]Owner, what, name, user string, ref *metav1.OwnerReference, found Found) string {
	owner, ok := kinds[ref.Kind]
	prefix := fmt.Sprintf("%s %s: metadata.ownerReferences: its controller is %s %s", what, name, ref.Kind, ref.Name)
	switch {
	case !ok:
		return ""
	case !slices.Contains(owner.Controllers, user):
		return fmt.Sprintf("%s, but only the %s controller makes the %ss of a %s (not %s): its pods would run unqueued", prefix, ref.Kind, what, ref.Kind, user)
	case !found.Exists:
		return fmt.Sprintf("%s (uid %s), which does not exist", prefix, ref.UID)
	case !found.Queued:
		return fmt.Sprintf("%s, which is not queued: its pods would run unqueued; queue the %s (delete it and create it again where queueing is enforced, or give it a queue label)", prefix, ref.Kind)
	}
	return ""
}

// Vouch is Judge for obj's controller reference ref, reading the owner in
// obj's namespace.
func (o *Owners) Vouch(ctx context.Context, what, user string, obj client.Object, ref *metav1.OwnerReference) (string, error) {
	owner, ok := o.Kinds[ref.Kind]
	if !ok {
		return "", nil
	}
	var found Found
	if slices.Contains(owner.Controllers, user) {
		key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}
		got := owner.New()
		err := o.Reader.Get(ctx, key, got)
		if (err == nil && got.GetUID() != ref.UID) || apierrors.IsNotFound(err) {
			// Made a moment ago, and not in the cache yet: ask the API server.
			got = owner.New()
			err = o.Live.Get(ctx, key, got)
		}
		switch {
		case err == nil:
			found = Found{Exists: got.GetUID() == ref.UID, Queued: got.GetUID() == ref.UID && owner.Queued(got)}
		case meta.IsNoMatchError(err):
			// Its kind is not served here (JobSet's CRD not installed): no
			// such owner.
		case !apierrors.IsNotFound(err):
			return "", fmt.Errorf("reading %s %s/%s, the controller of %s %s: %w", ref.Kind, key.Namespace, key.Name, what, obj.GetName(), err)
		}
	}
	return Judge(o.Kinds, what, obj.GetName(), user, ref, found), nil
}
