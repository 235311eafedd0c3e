package pods

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

func pod(labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": resource.MustParse("1")}}}}},
	}
}

func TestQueueName(t *testing.T) {
	yes := true
	jobPod := pod(map[string]string{berthv1.QueueNameLabel: "q"})
	jobPod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", Controller: &yes}}
	for _, tc := range []struct {
		name string
		kind Kind
		pod  *corev1.Pod
		want string
	}{
		{"berth's label", Kind{}, pod(map[string]string{berthv1.QueueNameLabel: "q"}), "q"},
		{"Kueue's label", Kind{}, pod(map[string]string{berthv1.KueueQueueNameLabel: "k"}), "k"},
		{"no label", Kind{}, pod(nil), ""},
		{"no label, opted-in namespace", Kind{Default: true}, pod(nil), DefaultLocalQueue},
		{"a Job's pod: queued as its Job", Kind{Default: true}, jobPod, ""},
	} {
		if got := tc.kind.QueueName(tc.pod); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestHoldAndStart(t *testing.T) {
	p := pod(map[string]string{berthv1.KueueQueueNameLabel: "k"})
	if !(Kind{}).Hold(p) {
		t.Fatal("Hold changed nothing")
	}
	if !Gated(p) || len(p.Finalizers) != 1 || p.Labels[berthv1.QueueNameLabel] != "k" {
		t.Fatalf("held pod: gates %v finalizers %v labels %v", p.Spec.SchedulingGates, p.Finalizers, p.Labels)
	}
	if (Kind{}).Hold(p) {
		t.Error("a second Hold changed the pod")
	}
	rf := &berthv1.ResourceFlavor{Spec: berthv1.ResourceFlavorSpec{NodeLabels: map[string]string{"pool": "a"},
		Tolerations: []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}}}
	if err := (Kind{}).Start(p, map[string][]*berthv1.ResourceFlavor{"main": {rf}}); err != nil {
		t.Fatal(err)
	}
	if Gated(p) || p.Spec.NodeSelector["pool"] != "a" || len(p.Spec.Tolerations) != 1 {
		t.Errorf("started pod: gates %v nodeSelector %v tolerations %v", p.Spec.SchedulingGates, p.Spec.NodeSelector, p.Spec.Tolerations)
	}
	if ps := (Kind{}).PodSets(p); len(ps) != 1 || ps[0].Count != 1 || ps[0].Requests.Cpu().String() != "1" {
		t.Errorf("pod sets %+v", ps)
	}
}

func TestGone(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { v := metav1.NewTime(now.Add(d)); return &v }
	for _, tc := range []struct {
		name     string
		node     string
		deletion *metav1.Time
		want     bool
	}{
		{"not being deleted", "n", nil, false},
		{"deleted before it was bound", "", at(30 * time.Second), true},
		{"deleted on its node, within its grace period", "n", at(30 * time.Second), false},
		{"grace period over", "n", at(-time.Second), true},
		{"force-deleted", "n", at(0), true},
	} {
		p := pod(nil)
		p.Spec.NodeName, p.DeletionTimestamp = tc.node, tc.deletion
		if got := Gone(p, now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestGroup(t *testing.T) {
	for _, tc := range []struct {
		name        string
		labels, ann map[string]string
		group       string
		total       int32
		err         string
	}{
		{"alone", nil, nil, "", 0, ""},
		{"berth's", map[string]string{berthv1.PodGroupNameLabel: "g"}, map[string]string{berthv1.PodGroupTotalCountAnnotation: "8"}, "g", 8, ""},
		{"Kueue's", map[string]string{berthv1.KueuePodGroupNameLabel: "k"}, map[string]string{berthv1.KueuePodGroupTotalCountAnnotation: "2"}, "k", 2, ""},
		{"no count", map[string]string{berthv1.PodGroupNameLabel: "g"}, nil, "g", 0,
			"pod group g: annotation berth.dev/pod-group-total-count is missing"},
		{"zero", map[string]string{berthv1.PodGroupNameLabel: "g"}, map[string]string{berthv1.PodGroupTotalCountAnnotation: "0"}, "g", 0,
			`annotation berth.dev/pod-group-total-count="0": want a whole number from 1 to 1000`},
		{"too many", map[string]string{berthv1.PodGroupNameLabel: "g"}, map[string]string{berthv1.KueuePodGroupTotalCountAnnotation: "1001"}, "g", 0,
			`annotation kueue.x-k8s.io/pod-group-total-count="1001"`},
		{"not a number", map[string]string{berthv1.PodGroupNameLabel: "g"}, map[string]string{berthv1.PodGroupTotalCountAnnotation: "eight"}, "g", 0,
			`"eight": want a whole number`},
	} {
		p := pod(tc.labels)
		p.Annotations = tc.ann
		g, total, err := Group(p)
		if g != tc.group || total != tc.total || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %q %d %v; want %q %d %q", tc.name, g, total, err, tc.group, tc.total, tc.err)
		}
		if why := (Kind{Default: true}).Refuse(p); (why == "") != (tc.err == "") { // queued, in the default LocalQueue
			t.Errorf("%s: Refuse %q; want a refusal exactly when the count is wrong", tc.name, why)
		}
	}
}
