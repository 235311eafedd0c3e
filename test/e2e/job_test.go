package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-dev/berth/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// The control plane serves, the Job controller makes a Job's pod and
// kube-scheduler binds it to a Node the test creates: the pieces every berth
// feature stands on.
func TestJobPodIsCreatedAndScheduled(t *testing.T) {
	env := testenv.New(t)
	ctx := context.Background()
	node := env.CreateReadyNode(t, "node-"+env.Namespace, nil).Name

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: env.Namespace},
		Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					NodeSelector:  map[string]string{"kubernetes.io/hostname": node},
					Containers: []corev1.Container{{
						Name: "main", Image: "busybox",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("500m")}},
					}},
				},
			},
		},
	}
	if _, err := env.Kube.BatchV1().Jobs(env.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, func() error {
		pods, err := env.Kube.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=hello"})
		if err != nil {
			return err
		}
		if len(pods.Items) != 1 {
			return fmt.Errorf("job controller made %d pods, want 1", len(pods.Items))
		}
		if got := pods.Items[0].Spec.NodeName; got != node {
			return fmt.Errorf("pod %s bound to %q, want %q", pods.Items[0].Name, got, node)
		}
		return nil
	})
}
