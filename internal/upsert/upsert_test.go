package upsert_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/berth-dev/berth/internal/upsert"
)

func secret(data string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
		Data: map[string][]byte{"k": []byte(data)}}
}

func setData(want *corev1.Secret) func(*corev1.Secret) error {
	return func(have *corev1.Secret) error { have.Data = want.Data; return nil }
}

// countWrites counts the creates and updates a fake client is asked for.
func countWrites(objs ...client.Object) (client.Client, *int) {
	n := 0
	c := fake.NewClientBuilder().WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			n++
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			n++
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	return c, &n
}

func TestObjectCreatesUpdatesAndLeavesAlone(t *testing.T) {
	ctx := context.Background()
	c, writes := countWrites()
	if err := upsert.Object(ctx, c, c, secret("a"), setData(secret("a"))); err != nil || *writes != 1 {
		t.Fatalf("creating: err %v, %d writes, want 1", err, *writes)
	}
	if err := upsert.Object(ctx, c, c, secret("a"), setData(secret("a"))); err != nil || *writes != 1 {
		t.Fatalf("the same again: err %v, %d writes, want none more", err, *writes)
	}
	if err := upsert.Object(ctx, c, c, secret("b"), setData(secret("b"))); err != nil || *writes != 2 {
		t.Fatalf("changed: err %v, %d writes, want one more", err, *writes)
	}
	var got corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "s"}, &got); err != nil || string(got.Data["k"]) != "b" {
		t.Fatalf("stored: %v %q, want the update", err, got.Data["k"])
	}
	if err := upsert.Object(ctx, c, c, secret("c"), nil); err != nil || *writes != 2 {
		t.Fatalf("nil set: err %v, %d writes, want the object left alone", err, *writes)
	}
}

func TestObjectNamesTheObjectInErrors(t *testing.T) {
	c, _ := countWrites(secret("a"))
	err := upsert.Object(context.Background(), c, c, secret("a"), func(*corev1.Secret) error {
		return errRefused
	})
	if err == nil || !strings.Contains(err.Error(), "Secret ns/s") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("err %v, want it to name Secret ns/s and say why", err)
	}
}

// An object made by someone else between the read and the create is read
// again and updated, not reported as an error.
func TestObjectMadeMeanwhileIsUpdated(t *testing.T) {
	ctx := context.Background()
	base := fake.NewClientBuilder().Build()
	raced := false
	c := interceptor.NewClient(base, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if !raced {
				raced = true
				if err := c.Create(ctx, secret("theirs"), opts...); err != nil {
					return err
				}
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	if err := upsert.Object(ctx, c, c, secret("mine"), setData(secret("mine"))); err != nil {
		t.Fatal(err)
	}
	var got corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "s"}, &got); err != nil || string(got.Data["k"]) != "mine" {
		t.Fatalf("stored: %v %q, want ours", err, got.Data["k"])
	}
}

var errRefused = errors.New("refused")
