package integrations

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

const wait = 60 * time.Second

var ctx = context.Background()

func TestMain(m *testing.M) {
	os.Exit(testenv.MainClusters(m, testenv.Cluster{Name: "integrations", ControllerArgs: []string{"--integrations=batch/job"}}))
}

// With only batch/job on, a Job is queued, while a Pod and a Deployment
// that ask for the same queue are left alone: created as they are, run
// without a Workload.
func TestOnlyTheIntegrationsOnQueue(t *testing.T) {
	env := testenv.New(t)
	env.CreateSimNode(t, env.Name("n1"), nil)
	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Toleration(env.Toleration()).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())

	job := MakeJob("queued", env.Namespace).Queue("main").Request("cpu", "1").PodAnnotation("berth.dev/sim-duration", "10m").Obj()
	env.Create(t, job)
	if !jobs.Suspended(job) {
		t.Fatal("a queued Job was not created suspended")
	}
	testenv.Eventually(t, wait, func() error {
		var wl berthv1.Workload
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: jobs.WorkloadName(job)}, &wl); err != nil {
			return err
		}
		if !workload.IsAdmitted(&wl) {
			return fmt.Errorf("the Job's Workload is not admitted")
		}
		return nil
	})

	labels := map[string]string{berthv1.QueueNameLabel: "main", "app": "web"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "alone", Namespace: env.Namespace, Labels: labels},
		Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{env.Toleration()},
			Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
	env.Create(t, pod)
	if len(pod.Spec.SchedulingGates) > 0 || len(pod.Finalizers) > 0 {
		t.Fatalf("a Pod was held though pods are not queued: gates %v, finalizers %v", pod.Spec.SchedulingGates, pod.Finalizers)
	}
	replicas := int32(1)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: env.Namespace, Labels: map[string]string{berthv1.QueueNameLabel: "main"}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web2"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web2"}},
				Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{env.Toleration()},
					Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}},
	}
	env.Create(t, d)
	if _, ok := d.Spec.Template.Labels[berthv1.QueueNameLabel]; ok {
		t.Fatalf("a Deployment's pod template was given a queue though Deployments are not queued: %v", d.Spec.Template.Labels)
	}
	// Both run, and no Workload is made for either.
	testenv.Eventually(t, wait, func() error {
		var list corev1.PodList
		if err := env.Client.List(ctx, &list, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		running := map[string]bool{}
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				running[p.Labels["app"]] = true
			}
		}
		if !running["web"] || !running["web2"] {
			return fmt.Errorf("running: %v; want the Pod and the Deployment's pod", running)
		}
		return nil
	})
	var wls berthv1.WorkloadList
	if err := env.Client.List(ctx, &wls, client.InNamespace(env.Namespace)); err != nil {
		t.Fatal(err)
	}
	if len(wls.Items) != 1 {
		t.Fatalf("%d Workloads; want only the Job's", len(wls.Items))
	}
}
