package controlplane

import (
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfigs writes the admin kubeconfig (certificates embedded, so it can
// be copied elsewhere) and one per component (referring to files under pki/).
func writeKubeconfigs(l Layout, name string, apiPort int, identities []Identity) error {
	server := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	ctx := "berth-" + name

	ca, err := os.ReadFile(l.PKI("ca.crt"))
	if err != nil {
		return err
	}
	cert, err := os.ReadFile(l.PKI("admin.crt"))
	if err != nil {
		return err
	}
	key, err := os.ReadFile(l.PKI("admin.key"))
	if err != nil {
		return err
	}
	admin := clientcmdapi.NewConfig()
	admin.Clusters[ctx] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	admin.AuthInfos[ctx] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	admin.Contexts[ctx] = &clientcmdapi.Context{Cluster: ctx, AuthInfo: ctx}
	admin.CurrentContext = ctx
	if err := writeKubeconfig(l.Kubeconfig(), admin); err != nil {
		return err
	}

	components := []string{"kube-controller-manager", "kube-scheduler"}
	for _, id := range identities {
		components = append(components, id.Name)
	}
	for _, component := range components {
		c := clientcmdapi.NewConfig()
		c.Clusters[ctx] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: l.PKI("ca.crt")}
		c.AuthInfos[component] = &clientcmdapi.AuthInfo{
			ClientCertificate: l.PKI(component + ".crt"), ClientKey: l.PKI(component + ".key")}
		c.Contexts[ctx] = &clientcmdapi.Context{Cluster: ctx, AuthInfo: component}
		c.CurrentContext = ctx
		if err := writeKubeconfig(l.ComponentKubeconfig(component), c); err != nil {
			return err
		}
	}
	return nil
}

func writeKubeconfig(path string, c *clientcmdapi.Config) error {
	data, err := clientcmd.Write(*c)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data, 0o600)
}
