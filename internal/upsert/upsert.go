package upsert

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Object creates want, or, when an object of its name exists, lets set copy
// what the caller owns from want onto it and updates it if that changed
// anything. A nil set leaves an existing object as it is. r reads the
// current object: the client itself, or an API reader where no cache
// watches the kind. A conflict with another writer is retried with a fresh
// read. Errors name the object's kind and name.
func Object[T client.Object](ctx context.Context, c client.Client, r client.Reader, want T, set func(have T) error) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		have := want.DeepCopyObject().(T)
		err := r.Get(ctx, client.ObjectKeyFromObject(want), have)
		if apierrors.IsNotFound(err) {
			err = c.Create(ctx, want.DeepCopyObject().(T))
			if apierrors.IsAlreadyExists(err) {
				// Made meanwhile by someone else: read it again and update.
				return apierrors.NewConflict(schema.GroupResource{Resource: kind(want)}, want.GetName(), err)
			}
			return err
		}
		if err != nil || set == nil {
			return err
		}
		before := have.DeepCopyObject()
		if err := set(have); err != nil {
			return err
		}
		if equality.Semantic.DeepEqual(before, have) {
			return nil
		}
		return c.Update(ctx, have)
	})
	if err != nil {
		return fmt.Errorf("%s %s: %w", kind(want), name(want), err)
	}
	return nil
}

func kind(obj client.Object) string {
	t := reflect.TypeOf(obj)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

func name(obj client.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}
