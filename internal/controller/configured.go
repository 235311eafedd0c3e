package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/berth-dev/berth/internal/guard"
	"github.com/berth-dev/berth/internal/integration"
	"github.com/berth-dev/berth/internal/integration/configured"
	"github.com/berth-dev/berth/internal/manifests"
)

// configuredReady says why a configured kind cannot be queued yet, or nil:
// the API server must serve it, its CRD must have the configured paths, and
// berth's controller must be allowed to read and update its objects. An
// error of the configuration itself (a path the CRD lacks) is wrapped in
// errConfiguration.
func configuredReady(ctx context.Context, c client.Client, disc discovery.DiscoveryInterface, k *configured.Compiled) error {
	list, err := disc.ServerResourcesForGroupVersion(k.GVK.GroupVersion().String())
	if err != nil || !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == k.Kind && r.Name == k.Resource }) {
		return fmt.Errorf("the API server does not serve %s (%s, resource %s): its CRD is not installed", k.Kind, k.GVK.GroupVersion(), k.Resource)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, types.NamespacedName{Name: k.CRDName()}, &crd); err != nil {
		return fmt.Errorf("reading CustomResourceDefinition %s (berth's controller needs get on it): %w", k.CRDName(), err)
	}
	if err := configured.CheckSchema(*k, &crd); err != nil {
		return fmt.Errorf("%w: %w", errConfiguration, err)
	}
	probe := &unstructured.UnstructuredList{}
	probe.SetGroupVersionKind(k.GVK.GroupVersion().WithKind(k.Kind + "List"))
	if err := c.List(ctx, probe, client.Limit(1)); err != nil {
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("berth's controller may not list %s: grant it get, list, watch, update and patch on %s (%s): %w", k.Resource, k.Resource, k.Group, err)
		}
		return fmt.Errorf("listing %s: %w", k.Resource, err)
	}
	return nil
}

var errConfiguration = errors.New("--configured-kinds")

// turnOnConfigured applies k's admission policies (package guard) with
// berth's own identity (self), then starts its reconciler and serves its webhook
// handlers; the caller adds it to the webhook configuration.
func turnOnConfigured(ctx context.Context, mgr ctrl.Manager, cfg *rest.Config, direct client.Client, self, namespace string, podsReady bool,
	k *configured.Compiled, owners *integration.Owners) error {
	o := guard.Options{Identity: self, Namespace: namespace}
	if err := manifests.GuardKinds(ctx, cfg, o, []guard.Kind{k.Guard()}); err != nil {
		return fmt.Errorf("applying the admission policies of %s (berth's controller needs get, create, update and patch on validatingadmissionpolicies and validatingadmissionpolicybindings): %w", k.Kind, err)
	}
	guardChecked(ctx, direct, guard.Policies(o, []guard.Kind{k.Guard()}))
	if err := configured.Setup(mgr, k, podsReady); err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(k.WebhookPath, &crwebhook.Admission{Handler: integration.NewHolder(configured.Kind{C: k}).Vouching(owners)})
	mgr.GetWebhookServer().Register(k.DefaultWebhookPath, &crwebhook.Admission{Handler: integration.NewHolder(configured.Kind{C: k, Default: true}).Vouching(owners)})
	mgr.GetWebhookServer().Register(k.ScalePath(), &crwebhook.Admission{Handler: configured.ScaleGuard{Kind: configured.Kind{C: k}, Live: mgr.GetAPIReader()}})
	return nil
}

// guardCheckTimeout bounds guardChecked's wait.
const guardCheckTimeout = 30 * time.Second

// guardChecked waits until each ValidatingAdmissionPolicy of policies has
// been type-checked at its current generation (status.observedGeneration,
// which kube-controller-manager writes): the API server takes up a new
// policy a moment after it is stored, and a kind turned on before then
// could have an admitted object edited past its admission. Past
// guardCheckTimeout (no kube-controller-manager writes the status, say) it
// says so in the log and goes on.
func guardChecked(ctx context.Context, c client.Reader, policies []client.Object) {
	deadline := time.Now().Add(guardCheckTimeout)
	for _, o := range policies {
		if _, ok := o.(*admissionregistrationv1.ValidatingAdmissionPolicy); !ok {
			continue
		}
		for {
			var p admissionregistrationv1.ValidatingAdmissionPolicy
			err := c.Get(ctx, client.ObjectKeyFromObject(o), &p)
			if err == nil && p.Status.ObservedGeneration >= p.Generation {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				ctrl.Log.WithName("configured-kinds").Info("the API server has not reported its admission policy checked; going on",
					"policy", o.GetName(), "after", guardCheckTimeout)
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// configuredPoll is how often a configured kind that cannot be queued yet
// is looked at again.
const configuredPoll = 5 * time.Second

// waitForConfigured runs turnOn once k is ready (configuredReady), saying
// each new reason it is not in the log; it returns when ctx ends.
func waitForConfigured(ctx context.Context, c client.Client, disc discovery.DiscoveryInterface, k *configured.Compiled,
	turnOn func(context.Context) error) error {
	log := ctrl.Log.WithName("configured-kinds")
	last := ""
	t := time.NewTicker(configuredPoll)
	defer t.Stop()
	for {
		err := configuredReady(ctx, c, disc, k)
		if err == nil {
			if err = turnOn(ctx); err == nil {
				log.Info("kind queued from configuration is on", "kind", k.GVK.String())
				return nil
			}
		}
		if err.Error() != last {
			log.Info("kind queued from configuration is off until this changes", "kind", k.GVK.String(), "why", err.Error())
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
