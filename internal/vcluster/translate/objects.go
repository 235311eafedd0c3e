package translate

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
)

// HostConfigMap is the host copy of a virtual ConfigMap a Pod refers to.
func HostConfigMap(v *corev1.ConfigMap, o Options) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: hostMeta(v.ObjectMeta, o),
		Data: maps.Clone(v.Data), BinaryData: maps.Clone(v.BinaryData), Immutable: v.Immutable}
}

// HostSecret is the host copy of a virtual Secret a Pod refers to. A
// service account token Secret is refused: on the host, the token
// controller would fill it with a token of whichever host account its
// annotation names.
func HostSecret(v *corev1.Secret, o Options) (*corev1.Secret, error) {
	if v.Type == corev1.SecretTypeServiceAccountToken {
		return nil, fmt.Errorf("secret %s/%s: type %s: service account tokens are the virtual cluster's own and are not synced to the host",
			v.Namespace, v.Name, v.Type)
	}
	return &corev1.Secret{ObjectMeta: hostMeta(v.ObjectMeta, o), Type: v.Type,
		Data: maps.Clone(v.Data), Immutable: v.Immutable}, nil
}

// HostServiceAccount is the host account a tenant Pod runs as: named for
// the virtual one, with no token mounted and no secrets of its own.
func HostServiceAccount(v *corev1.ServiceAccount, o Options) *corev1.ServiceAccount {
	no := false
	h := &corev1.ServiceAccount{ObjectMeta: hostMeta(v.ObjectMeta, o), AutomountServiceAccountToken: &no}
	for _, s := range v.ImagePullSecrets {
		h.ImagePullSecrets = append(h.ImagePullSecrets, corev1.LocalObjectReference{Name: HostName(s.Name, v.Namespace, o.VCluster)})
	}
	return h
}
