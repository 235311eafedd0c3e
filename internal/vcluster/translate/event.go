package translate

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VirtualEvent is the virtual cluster's copy of a host event about the host
// Pod of virtual Pod pod: the same reason, message, type, count and times,
// about the virtual Pod. Its name keeps the host event's suffix, so each
// host event has one copy, updated as the host one is.
func VirtualEvent(host *corev1.Event, pod *corev1.Pod) *corev1.Event {
	suffix := host.Name
	if i := strings.LastIndex(host.Name, "."); i >= 0 {
		suffix = host.Name[i+1:]
	}
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name + "." + suffix, Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, FieldPath: host.InvolvedObject.FieldPath},
		Reason: host.Reason, Message: host.Message, Type: host.Type, Count: host.Count,
		FirstTimestamp: host.FirstTimestamp, LastTimestamp: host.LastTimestamp, EventTime: host.EventTime,
		Source: host.Source, Action: host.Action,
		ReportingController: host.ReportingController, ReportingInstance: host.ReportingInstance,
		Series: host.Series.DeepCopy(),
	}
}

// EventChanged reports whether a virtual event copy is behind want.
func EventChanged(want, have *corev1.Event) bool {
	return want.Count != have.Count || want.Message != have.Message || !want.LastTimestamp.Equal(&have.LastTimestamp) ||
		(want.Series != nil && (have.Series == nil || want.Series.Count != have.Series.Count))
}
