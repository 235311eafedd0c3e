package integrations

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/addon"
	"github.com/berth-dev/berth/internal/integration/jobs"
	"github.com/berth-dev/berth/internal/integration/jobsets"
	"github.com/berth-dev/berth/internal/manifests"
	"github.com/berth-dev/berth/internal/testenv"
	"github.com/berth-dev/berth/internal/workload"
	. "github.com/berth-dev/berth/test/fixtures"
)

const wait = 60 * time.Second

var ctx = context.Background()

func TestMain(m *testing.M) {
	// JobSets and TrainJobs are on, but their CRDs are not installed when
	// berth starts; nor is that of MPIJob, queued from configuration.
	// KubeRay's operator and Kubeflow's training operator run (--with),
	// their kinds queued from configuration too.
	os.Exit(testenv.MainClusters(m, testenv.Cluster{Name: "integrations",
		ControllerArgs:  []string{"--integrations=batch/job,jobset.x-k8s.io/jobset,trainer.kubeflow.org/trainjob"},
		ConfiguredKinds: configuredKinds, With: []string{"ray", "training-operator"}}))
}

// webhookNames are the webhooks of berth's configuration.
func webhookNames(env *testenv.Env) ([]string, error) {
	var cfg admissionregistrationv1.MutatingWebhookConfiguration
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "berth"}, &cfg); err != nil {
		return nil, err
	}
	var names []string
	for _, h := range cfg.Webhooks {
		names = append(names, h.Name)
	}
	return names, nil
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

// installCRDs installs the CRDs of an addon, and waits until they are
// served.
func installCRDs(t *testing.T, env *testenv.Env, a addon.Addon) {
	t.Helper()
	docs, err := a.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := manifests.Decode(docs...)
	if err != nil {
		t.Fatal(err)
	}
	crds := slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() != "CustomResourceDefinition" })
	if err := manifests.ApplyEstablished(ctx, env.Config, crds...); err != nil {
		t.Fatal(err)
	}
}

// An integration whose CRD is missing when berth starts turns on once the
// CRD is installed, without a restart: its webhook joins berth's webhook
// configuration, and a JobSet created then is held and queued. TrainJobs,
// which run as JobSets, stay off with their own CRD installed until
// JobSet's is too.
func TestJobSetsTurnOnWhenTheirCRDIsInstalled(t *testing.T) {
	env := testenv.New(t)
	hooks := func() ([]string, error) { return webhookNames(env) }
	names, err := hooks()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, "jobsets.berth.dev") || slices.Contains(names, "trainjobs.berth.dev") {
		t.Fatalf("berth's webhook configuration has JobSets' or TrainJobs' webhook though their CRDs are not installed: %v", names)
	}

	installCRDs(t, env, addon.Trainer)
	// berth looks every 5 s: three looks.
	testenv.Consistently(t, 15*time.Second, func() error {
		names, err := hooks()
		if err != nil {
			return err
		}
		if slices.Contains(names, "trainjobs.berth.dev") {
			return fmt.Errorf("webhooks %v: TrainJobs' is there though JobSets are not served", names)
		}
		return nil
	})

	installCRDs(t, env, addon.JobSet)
	testenv.Eventually(t, wait, func() error {
		names, err := hooks()
		if err != nil {
			return err
		}
		if !slices.Contains(names, "jobsets.berth.dev") || !slices.Contains(names, "trainjobs.berth.dev") {
			return fmt.Errorf("webhooks %v: JobSets' and TrainJobs' not there yet", names)
		}
		return nil
	})

	rf, cq := env.Name("rf"), env.Name("cq")
	env.Create(t, MakeResourceFlavor(rf).Obj())
	env.Create(t, MakeClusterQueue(cq).ResourceGroup(MakeFlavorQuotas(rf).Resource("cpu", "4").Obj()).Obj())
	env.Create(t, MakeLocalQueue("main", env.Namespace, cq).Obj())
	js := MakeJobSet("train", env.Namespace).Queue("main").ReplicatedJob("workers", 2, 1).Request("cpu", "1").Obj()
	env.Create(t, js)
	if !jobsets.Suspended(js) {
		t.Fatal("a queued JobSet was not created suspended once JobSets were on")
	}
	// No JobSet controller runs here: berth admits it and lets it go.
	testenv.Eventually(t, wait, func() error {
		var wl berthv1.Workload
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: jobsets.WorkloadName(js)}, &wl); err != nil {
			return err
		}
		if !workload.IsAdmitted(&wl) {
			return fmt.Errorf("the JobSet's Workload is not admitted")
		}
		var now jobsetv1.JobSet
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(js), &now); err != nil {
			return err
		}
		if jobsets.Suspended(&now) {
			return fmt.Errorf("the admitted JobSet is still suspended")
		}
		return nil
	})
}
