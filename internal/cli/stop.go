package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/stop"
)

// queueRef is a queue, workload or Job named on the command line.
type queueRef struct {
	kind      string // ClusterQueue, LocalQueue, Workload, or a kind of ofObject
	name      string
	namespace string // all but ClusterQueue
}

// parseQueueKind reads the kind argument of stop and resume.
func parseQueueKind(s string) (string, error) {
	switch strings.ToLower(s) {
	case "clusterqueue", "clusterqueues", "cq":
		return "ClusterQueue", nil
	case "localqueue", "localqueues", "lq", "queue":
		return "LocalQueue", nil
	case "workload", "workloads", "wl":
		return "Workload", nil
	case "job", "jobs":
		return "Job", nil
	case "jobset", "jobsets":
		return "JobSet", nil
	case "statefulset", "statefulsets", "sts":
		return "StatefulSet", nil
	case "trainjob", "trainjobs":
		return "TrainJob", nil
	}
	return "", fmt.Errorf("%q: stop and resume take clusterqueue (cq), localqueue (lq), workload (wl), job, jobset, statefulset (sts) or trainjob", s)
}

// ofObject: the kinds whose one Workload berth names by the object it was
// made for (findWorkload).
var ofObject = map[string]bool{"Job": true, "JobSet": true, "StatefulSet": true, "TrainJob": true}

func (q queueRef) String() string {
	if q.kind == "ClusterQueue" {
		return "ClusterQueue " + q.name
	}
	return fmt.Sprintf("%s %s/%s", q.kind, q.namespace, q.name)
}

func newStopCommand() *cobra.Command   { return stopResumeCommand(true) }
func newResumeCommand() *cobra.Command { return stopResumeCommand(false) }

func stopResumeCommand(stopping bool) *cobra.Command {
	var (
		inst       instanceFlags
		kubeconfig string
		namespace  string
		drain      bool
	)
	cmd := &cobra.Command{
		Use:   "resume (clusterqueue|localqueue|workload|job|jobset|statefulset|trainjob) NAME",
		Short: "Let a stopped queue admit again (stopPolicy None), or a stopped workload queue again",
		Example: `  berth resume clusterqueue team-a
  berth resume localqueue jobs -n team-a
  berth resume job train -n team-a`,
		Args: cobra.ExactArgs(2),
	}
	if stopping {
		cmd.Use = "stop (clusterqueue|localqueue|workload|job|jobset|statefulset|trainjob) NAME"
		cmd.Short = "Stop a queue from admitting (stopPolicy Hold, or HoldAndDrain with --drain), or a workload from running"
		cmd.Long = `Stop a ClusterQueue or LocalQueue from admitting: what it admitted keeps
running (stopPolicy Hold), or, with --drain, is evicted and queues again
(HoldAndDrain). Stop a workload (or the Job, JobSet or StatefulSet it was
made for): it is
deactivated (spec.active false), evicted if admitted, and waits out of its
queue. 'berth resume' undoes either. It works against a berth instance
(--name/--data-dir) or any cluster running berth (--kubeconfig).`
		cmd.Example = `  berth stop clusterqueue team-a
  berth stop localqueue jobs -n team-a --drain
  berth stop job train -n team-a`
		cmd.Flags().BoolVar(&drain, "drain", false, "also evict what the queue admitted (HoldAndDrain)")
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		kind, err := parseQueueKind(args[0])
		if err != nil {
			return err
		}
		q := queueRef{kind: kind, name: args[1], namespace: namespace}
		policy := berthv1.StopPolicyNone
		switch {
		case stopping && drain:
			policy = berthv1.HoldAndDrain
		case stopping:
			policy = berthv1.Hold
		}
		c, err := clusterClient(&inst, kubeconfig)
		if err != nil {
			return err
		}
		if kind == "Workload" || ofObject[kind] {
			if drain {
				return fmt.Errorf("--drain is for queues: a stopped workload always gives its quota back")
			}
			msg, err := setActive(cmd.Context(), c, q, !stopping)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), msg)
			return nil
		}
		admitted, err := setStopPolicy(cmd.Context(), c, q, policy)
		if err != nil {
			return err
		}
		fmt.Fprintln(cmd.OutOrStdout(), stop.QueueDone(q.String(), policy, admitted))
		return nil
	}
	inst.add(cmd)
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the cluster to act on, instead of a berth instance")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace of the LocalQueue, workload, Job, JobSet or StatefulSet")
	comp := completer{inst: &inst, kubeconfig: &kubeconfig, namespace: &namespace}
	cmd.ValidArgsFunction = comp.kindThenName([]string{"clusterqueue", "localqueue", "workload", "job", "jobset", "statefulset", "trainjob"}, parseQueueKind)
	comp.flag(cmd, "namespace", "Namespace")
	return cmd
}

// setStopPolicy sets q's spec.stopPolicy and returns how many workloads it
// had admitted.
func setStopPolicy(ctx context.Context, c client.Client, q queueRef, policy berthv1.StopPolicy) (int32, error) {
	ns := q.namespace
	if q.kind == "ClusterQueue" {
		ns = ""
	}
	admitted, err := stop.Queue(ctx, c, ns, q.name, policy)
	if apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("%s not found", q)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", q, err)
	}
	return admitted, nil
}

// setActive sets spec.active of the workload q names (a Job's: the
// Workload berth made for it) and says what follows.
func setActive(ctx context.Context, c client.Client, q queueRef, active bool) (string, error) {
	found, err := findWorkload(ctx, c, q)
	if err != nil {
		return "", err
	}
	wl, err := stop.Workload(ctx, c, client.ObjectKeyFromObject(found), active)
	if err != nil {
		return "", fmt.Errorf("%s: %w", q, err)
	}
	what := fmt.Sprintf("Workload %s/%s", wl.Namespace, wl.Name)
	if ofObject[q.kind] {
		what = fmt.Sprintf("%s (Workload %s)", q, wl.Name)
	}
	return stop.WorkloadDone(what, active, wl.Status.Admission != nil), nil
}

// findWorkload reads the Workload q names, or the one berth made for the
// Job, JobSet or StatefulSet q names (the one it owns).
func findWorkload(ctx context.Context, c client.Client, q queueRef) (*berthv1.Workload, error) {
	if q.kind == "Workload" {
		var wl berthv1.Workload
		if err := c.Get(ctx, types.NamespacedName{Namespace: q.namespace, Name: q.name}, &wl); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("%s not found", q)
			}
			return nil, fmt.Errorf("%s: %w", q, err)
		}
		return &wl, nil
	}
	var list berthv1.WorkloadList
	if err := c.List(ctx, &list, client.InNamespace(q.namespace)); err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	for i := range list.Items {
		for _, ref := range list.Items[i].OwnerReferences {
			// A configured kind is named as its user types it (mpijob).
			if (ref.Kind == q.kind || (!ofObject[q.kind] && strings.EqualFold(ref.Kind, q.kind))) && ref.Name == q.name {
				return &list.Items[i], nil
			}
		}
	}
	if owner := queuedWith(ctx, c, q, list.Items); owner != "" {
		return nil, fmt.Errorf("%s has no Workload of its own: it is queued with its %s", q, owner)
	}
	return nil, fmt.Errorf("%s has no Workload: it is not queued by berth (no queue label), or does not exist", q)
}

// queuedWith names the controller of the object q names ("RayJob train",
// for a RayJob's RayCluster; "JobSet big", for a JobSet's Job) when it has
// one of workloads (those of q's namespace), the one that counts the
// object's pods; "" otherwise, or when the object cannot be read.
func queuedWith(ctx context.Context, c client.Client, q queueRef, workloads []berthv1.Workload) string {
	gvk, err := c.RESTMapper().KindFor(schema.GroupVersionResource{Resource: strings.ToLower(q.kind)})
	if err != nil {
		return ""
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, types.NamespacedName{Namespace: q.namespace, Name: q.name}, obj); err != nil {
		return ""
	}
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		return ""
	}
	for i := range workloads {
		for _, o := range workloads[i].OwnerReferences {
			if o.UID == ref.UID {
				return fmt.Sprintf("%s %s (Workload %s: berth why %s %s -n %s)", ref.Kind, ref.Name, workloads[i].Name, strings.ToLower(ref.Kind), ref.Name, q.namespace)
			}
		}
	}
	return ""
}

// clusterClient connects to --kubeconfig, else (as kubectl-berth) to the
// cluster of the usual kubeconfig, else to the selected berth instance,
// saying how to start it when it does not run.
func clusterClient(inst *instanceFlags, kubeconfig string) (client.Client, error) {
	cfg, err := clusterConfig(inst, kubeconfig)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: controller.Scheme()})
}

// clusterConfig connects to the cluster a command acts on: kubectl's as a
// plugin, else --kubeconfig, else the --name/--data-dir instance.
func clusterConfig(inst *instanceFlags, kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" && kubectlPlugin {
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(),
			&clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("the kubeconfig kubectl would use: %w", err)
		}
		return cfg, nil
	}
	if kubeconfig == "" {
		dir, err := inst.resolve()
		if err != nil {
			return nil, err
		}
		kubeconfig = controlplane.Layout{Dir: dir}.Kubeconfig()
		if _, err := os.Stat(kubeconfig); err != nil {
			return nil, fmt.Errorf("no berth instance in %s; start one with 'berth up --detach %s', or pass --kubeconfig",
				dir, inst.selector(dir))
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return cfg, nil
}
