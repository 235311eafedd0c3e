package workercluster

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// SecretKey is the key of the kubeconfig in a WorkerCluster's Secret.
const SecretKey = "kubeconfig"

// Client rate limits for a worker: dispatching a workload costs a worker
// about two writes (its copy, then the Job or the copy's deletion), so 100/s
// lets berth dispatch about 50 workloads a second to each worker, while
// leaving the worker's API server to its own users. client-go's defaults (5
// and 10) would cap dispatch at a few workloads a second.
const (
	QPS   = 100
	Burst = 200
)

// Problems lists what makes a kubeconfig unsafe to take from a Secret, each
// naming the field: a program to run (exec), an auth-provider plugin, a
// path on the controller's file system, a proxy (berth's credentials and
// traffic would pass through someone else's server), or a server whose
// certificate is not checked. Every user and cluster in the file counts,
// not only the current context's.
func Problems(cfg *clientcmdapi.Config) []string {
	var out []string
	for _, name := range sortedKeys(cfg.AuthInfos) {
		u := cfg.AuthInfos[name]
		if u.Exec != nil {
			out = append(out, fmt.Sprintf("users[%s].exec: runs the program %q; a kubeconfig from a Secret may not run programs", name, u.Exec.Command))
		}
		if u.AuthProvider != nil {
			out = append(out, fmt.Sprintf("users[%s].auth-provider: uses the %q plugin; a kubeconfig from a Secret may not", name, u.AuthProvider.Name))
		}
		for field, path := range map[string]string{"tokenFile": u.TokenFile, "client-certificate": u.ClientCertificate, "client-key": u.ClientKey} {
			if path != "" {
				out = append(out, fmt.Sprintf("users[%s].%s: names the file %s; a kubeconfig from a Secret may not read the controller's files (inline it as data)", name, field, path))
			}
		}
	}
	for _, name := range sortedKeys(cfg.Clusters) {
		c := cfg.Clusters[name]
		if p := c.CertificateAuthority; p != "" {
			out = append(out, fmt.Sprintf("clusters[%s].certificate-authority: names the file %s; a kubeconfig from a Secret may not read the controller's files (inline it as data)", name, p))
		}
		if c.ProxyURL != "" {
			out = append(out, fmt.Sprintf("clusters[%s].proxy-url: sends berth's traffic and credentials through %s; a kubeconfig from a Secret may not name a proxy (reach the server directly)", name, c.ProxyURL))
		}
		if c.InsecureSkipTLSVerify {
			out = append(out, fmt.Sprintf("clusters[%s].insecure-skip-tls-verify: the server's certificate would not be checked, so anyone between could read berth's credentials; give its CA as certificate-authority-data", name))
		}
	}
	slices.Sort(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Config reads a kubeconfig from a Secret and returns the client
// configuration of its current context, or an error naming everything
// wrong with it.
func Config(data []byte) (*rest.Config, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("not a kubeconfig: %w", err)
	}
	if problems := Problems(cfg); len(problems) > 0 {
		return nil, fmt.Errorf("refused: %s", strings.Join(problems, "; "))
	}
	if cfg.CurrentContext == "" {
		return nil, fmt.Errorf("it has no current-context")
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, cfg.CurrentContext, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("context %s: %w", cfg.CurrentContext, err)
	}
	rc.QPS, rc.Burst = QPS, Burst
	return rc, nil
}

// Reasons of the Active condition.
const (
	Connected      = "Connected"
	SecretNotFound = "SecretNotFound"
	BadKubeconfig  = "BadKubeconfig"
	Unreachable    = "Unreachable"
)

// Backoff between connection attempts: Base after the first failure,
// doubling, at most Max; a connected worker is checked every Recheck (one
// small request): a lost worker's workloads wait that long, plus the lost
// timeout, before they are dispatched again.
const (
	BackoffBase = time.Second
	BackoffMax  = 5 * time.Minute
	Recheck     = 10 * time.Second
)

// NextAttempt is how long to wait before looking at a worker again, after
// failures failed attempts in a row (0: it is connected).
func NextAttempt(failures int) time.Duration {
	if failures == 0 {
		return Recheck
	}
	d := BackoffBase
	for i := 1; i < failures && d < BackoffMax; i++ {
		d *= 2
	}
	return min(d, BackoffMax)
}

// Portable reads a kubeconfig file for a worker's Secret: one context (the
// current one, or context), its files inlined, and nothing Config would
// refuse.
func Portable(path, context string) ([]byte, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	if context != "" {
		cfg.CurrentContext = context
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: inlining its files: %w", path, err)
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, err
	}
	if _, err := Config(data); err != nil {
		return nil, fmt.Errorf("--kubeconfig %s: %w", path, err)
	}
	return data, nil
}
