package syncer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/berth-dev/berth/internal/vcluster/translate"
)

// Host is where a virtual cluster runs its Pods, as an administrator of the
// host sets it up (Prepare) and takes it down (Clean).
type Host struct {
	// Admin reaches the host with the rights to make the syncer's account.
	Admin *rest.Config
	// VCluster is the virtual cluster's name, Namespace the host namespace.
	VCluster, Namespace string
	// Policy is what the host allows the virtual cluster's Pods: its Pod
	// Security level goes on the host namespace.
	Policy translate.Policy
}

// nodesRBACName names the cluster-wide objects that let the syncer read nodes.
func (h Host) nodesRBACName() string {
	return "berth-vcluster-" + h.Namespace + "-" + h.VCluster + "-nodes"
}

func (h Host) selector() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: translate.Label + "=" + h.VCluster}
}

// Prepare makes the host namespace (if missing: createdNamespace), the
// syncer's ServiceAccount, its Role (this namespace only) and read access to
// nodes, the NetworkPolicy that fences tenant Pods in, and returns a
// kubeconfig with that account's token, for the syncer.
func (h Host) Prepare(ctx context.Context) (kubeconfig []byte, createdNamespace bool, err error) {
	kc, err := kubernetes.NewForConfig(h.Admin)
	if err != nil {
		return nil, false, err
	}
	name := ServiceAccountName(h.VCluster)
	labels := map[string]string{translate.Label: h.VCluster}
	meta := metav1.ObjectMeta{Name: name, Namespace: h.Namespace, Labels: labels}
	created := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("host %s: %w", what, err)
		}
		return nil
	}
	if err := translate.ValidateHostNamespace(h.Namespace); err != nil {
		return nil, false, err
	}
	nsLabels := translate.NamespaceLabels(h.Policy)
	if _, err := kc.CoreV1().Namespaces().Get(ctx, h.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		nsLabels[translate.Label] = h.VCluster
		_, err = kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.Namespace, Labels: nsLabels}}, metav1.CreateOptions{})
		if err := created("namespace "+h.Namespace, err); err != nil {
			return nil, false, err
		}
		createdNamespace = true
	} else if err != nil {
		return nil, false, fmt.Errorf("host namespace %s: %w", h.Namespace, err)
	} else if err := h.adopt(ctx, kc, nsLabels); err != nil {
		return nil, false, err
	}
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: h.Namespace}}
	nodes := metav1.ObjectMeta{Name: h.nodesRBACName(), Labels: labels}
	// A token Secret, filled by the host's token controller, does not expire.
	tokenName := name + "-token"
	steps := []struct {
		what string
		do   func() error
	}{
		{"ServiceAccount " + name, func() error {
			_, err := kc.CoreV1().ServiceAccounts(h.Namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{})
			return err
		}},
		{"Role " + name, func() error {
			_, err := kc.RbacV1().Roles(h.Namespace).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods", "configmaps", "secrets", "serviceaccounts", "services"}, Verbs: all},
				{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"get", "list", "watch"}},
			}}, metav1.CreateOptions{})
			return err
		}},
		{"RoleBinding " + name, func() error {
			_, err := kc.RbacV1().RoleBindings(h.Namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}}, metav1.CreateOptions{})
			return err
		}},
		{"ClusterRole " + nodes.Name, func() error {
			_, err := kc.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: nodes, Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}}}}, metav1.CreateOptions{})
			return err
		}},
		{"ClusterRoleBinding " + nodes.Name, func() error {
			_, err := kc.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: nodes, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: nodes.Name}}, metav1.CreateOptions{})
			return err
		}},
		{"NetworkPolicy " + translate.NetworkPolicyName, func() error {
			// Tenant Pods reach their own namespace and DNS alone.
			_, err := kc.NetworkingV1().NetworkPolicies(h.Namespace).Create(ctx, translate.NetworkPolicy(h.VCluster, h.Namespace), metav1.CreateOptions{})
			return err
		}},
		{"Secret " + tokenName, func() error {
			_, err := kc.CoreV1().Secrets(h.Namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: tokenName,
				Namespace: h.Namespace, Labels: labels, Annotations: map[string]string{corev1.ServiceAccountNameKey: name}},
				Type: corev1.SecretTypeServiceAccountToken}, metav1.CreateOptions{})
			return err
		}},
	}
	for _, s := range steps {
		if err := created(s.what, s.do()); err != nil {
			return nil, createdNamespace, err
		}
	}
	var token []byte
	for token == nil {
		got, err := kc.CoreV1().Secrets(h.Namespace).Get(ctx, tokenName, metav1.GetOptions{})
		if err != nil {
			return nil, createdNamespace, fmt.Errorf("host Secret %s/%s: %w", h.Namespace, tokenName, err)
		}
		if token = got.Data[corev1.ServiceAccountTokenKey]; token == nil {
			select {
			case <-ctx.Done():
				return nil, createdNamespace, fmt.Errorf("host Secret %s/%s has no token: the host's kube-controller-manager fills it; is it running? (%w)",
					h.Namespace, tokenName, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	ca := h.Admin.CAData
	if len(ca) == 0 && h.Admin.CAFile != "" {
		if ca, err = os.ReadFile(h.Admin.CAFile); err != nil {
			return nil, createdNamespace, err
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["host"] = &clientcmdapi.Cluster{Server: h.Admin.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos["syncer"] = &clientcmdapi.AuthInfo{Token: string(token)}
	cfg.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: "syncer", Namespace: h.Namespace}
	cfg.CurrentContext = "host"
	kubeconfig, err = clientcmd.Write(*cfg)
	return kubeconfig, createdNamespace, err
}

// adopt makes an existing namespace the virtual cluster's host namespace:
// refused while another virtual cluster runs there or it holds Secrets that
// are not this one's; otherwise it gets the Pod Security labels.
func (h Host) adopt(ctx context.Context, kc kubernetes.Interface, nsLabels map[string]string) error {
	sas, err := kc.CoreV1().ServiceAccounts(h.Namespace).List(ctx, metav1.ListOptions{LabelSelector: translate.Label})
	if err != nil {
		return fmt.Errorf("host namespace %s: %w", h.Namespace, err)
	}
	secrets, err := kc.CoreV1().Secrets(h.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("host namespace %s: %w", h.Namespace, err)
	}
	var syncers, owners []string
	for _, sa := range sas.Items {
		syncers = append(syncers, sa.Labels[translate.Label])
	}
	for _, s := range secrets.Items {
		owners = append(owners, s.Labels[translate.Label])
	}
	if why := translate.HostNamespaceInUse(h.Namespace, h.VCluster, syncers, owners); why != "" {
		return errors.New(why)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": nsLabels}})
	if err != nil {
		return err
	}
	if _, err := kc.CoreV1().Namespaces().Patch(ctx, h.Namespace, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("labelling host namespace %s for Pod Security: %w", h.Namespace, err)
	}
	return nil
}

// Clean deletes every host object of the virtual cluster and waits until
// they are gone: the synced Pods (and with them what the host's berth made
// for them), ConfigMaps, Secrets and ServiceAccounts, the syncer's account
// and RBAC, the NetworkPolicy, and the namespace if deleteNamespace
// (Prepare made it).
func (h Host) Clean(ctx context.Context, deleteNamespace bool, progress io.Writer) error {
	kc, err := kubernetes.NewForConfig(h.Admin)
	if err != nil {
		return err
	}
	ns, sel := h.Namespace, h.selector()
	name := ServiceAccountName(h.VCluster)
	fmt.Fprintf(progress, "deleting the host objects of virtual cluster %s in namespace %s\n", h.VCluster, ns)
	core, rbac := kc.CoreV1(), kc.RbacV1()
	del := metav1.DeleteOptions{}
	for _, err := range []error{
		core.Pods(ns).DeleteCollection(ctx, del, sel),
		core.ConfigMaps(ns).DeleteCollection(ctx, del, sel),
		core.Secrets(ns).DeleteCollection(ctx, del, sel),
		core.ServiceAccounts(ns).DeleteCollection(ctx, del, sel),
		deleteServices(ctx, kc, ns, sel),
		kc.NetworkingV1().NetworkPolicies(ns).DeleteCollection(ctx, del, sel),
		rbac.RoleBindings(ns).Delete(ctx, name, del),
		rbac.Roles(ns).Delete(ctx, name, del),
		rbac.ClusterRoleBindings().Delete(ctx, h.nodesRBACName(), del),
		rbac.ClusterRoles().Delete(ctx, h.nodesRBACName(), del),
	} {
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("host namespace %s: %w", ns, err)
		}
	}
	if deleteNamespace {
		if err := core.Namespaces().Delete(ctx, ns, del); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	// Queued Pods go once the host's berth has let them go (its finalizer).
	for {
		left, err := h.Left(ctx, deleteNamespace)
		if err != nil {
			return err
		}
		if left == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("host objects of virtual cluster %s still there: %s", h.VCluster, left)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Pods is how many host Pods the virtual cluster has.
func (h Host) Pods(ctx context.Context) (int, error) {
	kc, err := kubernetes.NewForConfig(h.Admin)
	if err != nil {
		return 0, err
	}
	list, err := kc.CoreV1().Pods(h.Namespace).List(ctx, h.selector())
	if err != nil {
		return 0, err
	}
	return len(list.Items), nil
}

// Left names what is left on the host of the virtual cluster (its labelled
// objects, its RBAC, and its namespace if withNamespace); "" when nothing is.
func (h Host) Left(ctx context.Context, withNamespace bool) (string, error) {
	kc, err := kubernetes.NewForConfig(h.Admin)
	if err != nil {
		return "", err
	}
	ns, sel := h.Namespace, h.selector()
	var left []string
	count := func(kind string, n int, err error) error {
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if n > 0 {
			left = append(left, fmt.Sprintf("%d %s", n, kind))
		}
		return nil
	}
	core, rbac := kc.CoreV1(), kc.RbacV1()
	pods, err := core.Pods(ns).List(ctx, sel)
	if err := count("pods", len(pods.Items), err); err != nil {
		return "", err
	}
	cms, err := core.ConfigMaps(ns).List(ctx, sel)
	if err := count("configmaps", len(cms.Items), err); err != nil {
		return "", err
	}
	secrets, err := core.Secrets(ns).List(ctx, sel)
	if err := count("secrets", len(secrets.Items), err); err != nil {
		return "", err
	}
	sas, err := core.ServiceAccounts(ns).List(ctx, sel)
	if err := count("serviceaccounts", len(sas.Items), err); err != nil {
		return "", err
	}
	svcs, err := core.Services(ns).List(ctx, sel)
	if err := count("services", len(svcs.Items), err); err != nil {
		return "", err
	}
	nps, err := kc.NetworkingV1().NetworkPolicies(ns).List(ctx, sel)
	if err := count("networkpolicies", len(nps.Items), err); err != nil {
		return "", err
	}
	roles, err := rbac.Roles(ns).List(ctx, sel)
	if err := count("roles", len(roles.Items), err); err != nil {
		return "", err
	}
	rbs, err := rbac.RoleBindings(ns).List(ctx, sel)
	if err := count("rolebindings", len(rbs.Items), err); err != nil {
		return "", err
	}
	crs, err := rbac.ClusterRoles().List(ctx, sel)
	if err := count("clusterroles", len(crs.Items), err); err != nil {
		return "", err
	}
	crbs, err := rbac.ClusterRoleBindings().List(ctx, sel)
	if err := count("clusterrolebindings", len(crbs.Items), err); err != nil {
		return "", err
	}
	if withNamespace {
		if _, err := core.Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
			left = append(left, "namespace "+ns)
		} else if !apierrors.IsNotFound(err) {
			return "", err
		}
	}
	return strings.Join(left, ", "), nil
}

// deleteServices deletes a virtual cluster's host Services: there is no
// DeleteCollection for Services.
func deleteServices(ctx context.Context, kc kubernetes.Interface, ns string, sel metav1.ListOptions) error {
	list, err := kc.CoreV1().Services(ns).List(ctx, sel)
	if err != nil {
		return err
	}
	for _, s := range list.Items {
		if err := kc.CoreV1().Services(ns).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
