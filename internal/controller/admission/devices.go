package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/core"
	"github.com/berth-dev/berth/internal/devicequota"
	"github.com/berth-dev/berth/internal/workload"
)

// watchTemplates feeds ResourceClaimTemplates to the devices' count: one
// made, changed or deleted offers again the pending workloads of its
// namespace that claim through it. Only with device-class mappings: without
// them devices are not counted and berth reads no templates.
func (c *Controller) watchTemplates(ctx context.Context, mgr manager.Manager) error {
	if len(c.opts.DeviceClasses) == 0 {
		return nil
	}
	inf, err := mgr.GetCache().GetInformer(ctx, &resourcev1.ResourceClaimTemplate{})
	if err != nil {
		return err
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.onTemplate,
		UpdateFunc: func(_, obj any) { c.onTemplate(obj) },
		DeleteFunc: c.onTemplate,
	})
	if err != nil {
		return err
	}
	c.synced = append(c.synced, reg)
	return nil
}

func (c *Controller) onTemplate(obj any) {
	t, ok := unwrap(obj).(*resourcev1.ResourceClaimTemplate)
	if !ok {
		return
	}
	var list berthv1.WorkloadList
	if err := c.client.List(context.Background(), &list, client.InNamespace(t.Namespace)); err != nil {
		c.log.Error(err, "listing workloads after a ResourceClaimTemplate change", "namespace", t.Namespace)
		return
	}
	for i := range list.Items {
		if slices.Contains(devicequota.TemplatesOf(&list.Items[i]), t.Name) {
			c.onWorkload(&list.Items[i])
		}
	}
}

// countDevices makes cw's requests what berth counts against quota: each
// pod set's spec requests and the devices its pods claim, as the quota
// resources their classes map to. What cannot be counted makes cw
// inadmissible, naming the pod set and the field.
func (c *Controller) countDevices(wl *berthv1.Workload, cw *core.Workload) {
	if len(wl.Status.ResourceRequests) == 0 && !slices.ContainsFunc(wl.Spec.PodSets, func(ps berthv1.PodSet) bool { return len(ps.ResourceClaims) > 0 }) {
		return
	}
	counted, why := c.deviceRequests(wl)
	if why != "" {
		cw.Inadmissible = why
		return
	}
	// From the spec, not a status written under other templates or mappings.
	for i, ps := range wl.Spec.PodSets {
		cw.PodSets[i].Requests = workload.CoreRequests(ps.Requests)
		for _, r := range counted {
			if r.Name == ps.Name {
				cw.PodSets[i].Requests = workload.CoreRequests(r.Resources)
			}
		}
	}
}

// deviceRequests are the requests of wl's pod sets whose pods claim
// devices, with those devices counted in (status.resourceRequests), or why
// they cannot be counted.
func (c *Controller) deviceRequests(wl *berthv1.Workload) ([]berthv1.PodSetRequest, string) {
	if len(c.opts.DeviceClasses) == 0 {
		return nil, ""
	}
	templates := func(name string) (*resourcev1.ResourceClaimTemplate, bool) {
		var t resourcev1.ResourceClaimTemplate
		err := c.client.Get(context.Background(), types.NamespacedName{Namespace: wl.Namespace, Name: name}, &t)
		if err != nil && !apierrors.IsNotFound(err) {
			c.log.Error(err, "reading a ResourceClaimTemplate", "namespace", wl.Namespace, "name", name)
		}
		return &t, err == nil
	}
	var out []berthv1.PodSetRequest
	for _, ps := range wl.Spec.PodSets {
		devices, err := c.opts.DeviceClasses.Requests(ps.ResourceClaims, templates)
		if err != nil {
			if missing := (*devicequota.MissingTemplate)(nil); errors.As(err, &missing) {
				return nil, fmt.Sprintf("pod set %s: %v: its devices are counted once it does", ps.Name, err)
			}
			return nil, fmt.Sprintf("pod set %s: %v", ps.Name, err)
		}
		if len(devices) == 0 {
			continue
		}
		all := ps.Requests.DeepCopy()
		if all == nil {
			all = corev1.ResourceList{}
		}
		for res, n := range devices {
			q := all[res]
			q.Add(*resource.NewQuantity(n, resource.DecimalSI))
			all[res] = q
		}
		out = append(out, berthv1.PodSetRequest{Name: ps.Name, Resources: all})
	}
	return out, ""
}
