// Package v1alpha1 reads KWOK's Stage API (group kwok.x-k8s.io) so that the
// stage files KWOK users have work with berth's simulator unchanged. The
// types follow KWOK's field for field; berth adds next.steps (see StageStep).
//
// +kubebuilder:object:generate=true
// +groupName=kwok.x-k8s.io
package v1alpha1
