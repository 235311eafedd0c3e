package raydashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils/dashboardclient"
	utiltypes "github.com/ray-project/kuberay/ray-operator/controllers/ray/utils/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/berth-dev/berth/internal/sim/nodepool"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Provider gives KubeRay's controllers a simulated dashboard for a cluster
// whose head runs on a simulated node (or that has no head running), and
// Real's for any other.
type Provider struct {
	Real  utils.ClientProvider
	Clock clock.PassiveClock
}

var _ utils.ClientProvider = Provider{}

// lookup bounds the reads that find a head's node, from the cache.
const lookup = 5 * time.Second

// GetDashboardClient is the dashboard client of a cluster.
func (p Provider) GetDashboardClient(mgr manager.Manager) func(*rayv1.RayCluster, string) (dashboardclient.RayDashboardClientInterface, error) {
	real := p.Real.GetDashboardClient(mgr)
	c := mgr.GetClient()
	return func(rc *rayv1.RayCluster, url string) (dashboardclient.RayDashboardClientInterface, error) {
		ctx, cancel := context.WithTimeout(context.Background(), lookup)
		defer cancel()
		sim, err := headSimulated(ctx, c, rc)
		if err != nil {
			return nil, err
		}
		if !sim {
			return real(rc, url)
		}
		return &Dashboard{Cluster: rc.DeepCopy(), Clock: p.Clock}, nil
	}
}

// GetHttpProxyClient is the client of a pod's Ray Serve proxy: Real's for
// a pod on a real node; for one on a simulated node, whose address leads
// nowhere, one that says the proxy is not simulated.
func (p Provider) GetHttpProxyClient(mgr manager.Manager) func(string, string, string, int) utils.RayHttpProxyClientInterface {
	real := p.Real.GetHttpProxyClient(mgr)
	c := mgr.GetClient()
	return func(hostIP, namespace, name string, port int) utils.RayHttpProxyClientInterface {
		ctx, cancel := context.WithTimeout(context.Background(), lookup)
		defer cancel()
		var pod corev1.Pod
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &pod); err != nil {
			return proxy{fmt.Errorf("reading pod %s/%s: %w", namespace, name, err)}
		}
		sim, err := onSimulatedNode(ctx, c, &pod)
		switch {
		case err != nil:
			return proxy{err}
		case sim:
			return proxy{errServe}
		}
		return real(hostIP, namespace, name, port)
	}
}

// proxy is a Ray Serve proxy that is not there.
type proxy struct{ err error }

func (p proxy) CheckProxyActorHealth(context.Context) error { return p.err }

// onSimulatedNode reports whether pod runs on a simulated node; not on a
// node yet, it runs nowhere to be asked.
func onSimulatedNode(ctx context.Context, c client.Reader, pod *corev1.Pod) (bool, error) {
	if pod.Spec.NodeName == "" {
		return true, nil
	}
	var node corev1.Node
	if err := c.Get(ctx, types.NamespacedName{Name: pod.Spec.NodeName}, &node); err != nil {
		return false, fmt.Errorf("reading node %s of pod %s/%s: %w", pod.Spec.NodeName, pod.Namespace, pod.Name, err)
	}
	return node.Labels[nodepool.OwnerLabel] == "true", nil
}

// headSimulated reports whether rc's head pod runs on a simulated node, or
// none runs anywhere.
func headSimulated(ctx context.Context, c client.Reader, rc *rayv1.RayCluster) (bool, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(rc.Namespace),
		client.MatchingLabels{utils.RayClusterLabelKey: rc.Name, utils.RayNodeTypeLabelKey: string(rayv1.HeadNode)}); err != nil {
		return false, fmt.Errorf("finding the head pod of RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	for i := range pods.Items {
		if pod := &pods.Items[i]; pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil {
			return onSimulatedNode(ctx, c, pod)
		}
	}
	// No head runs (the cluster is gone, or not up): there is no Ray to
	// ask, and a RayJob being deleted must not wait for one to stop its job.
	return true, nil
}

// Dashboard is the simulated dashboard of Cluster.
type Dashboard struct {
	Cluster *rayv1.RayCluster
	Clock   clock.PassiveClock
}

var _ dashboardclient.RayDashboardClientInterface = &Dashboard{}

// errServe: Ray Serve's applications and proxies are not simulated.
var errServe = errors.New("simulated by berth: Ray Serve (RayService) is not simulated; its applications and proxies never become ready")

func (d *Dashboard) InitClient(*http.Client, string) {}

func (d *Dashboard) UpdateDeployments(context.Context, []byte) error { return errServe }

func (d *Dashboard) GetServeDetails(context.Context) (*utiltypes.ServeDetails, error) {
	return nil, errServe
}

func (d *Dashboard) GetMultiApplicationStatus(context.Context) (map[string]*utiltypes.ServeApplicationStatus, error) {
	return nil, errServe
}

// GetJobInfo is the simulated job's state now (JobInfo).
func (d *Dashboard) GetJobInfo(_ context.Context, id string) (*utiltypes.RayJobInfo, error) {
	info := JobInfo(id, d.Cluster.Annotations, d.Cluster.CreationTimestamp.Time, d.Clock.Now())
	return &info, nil
}

// ListJobs lists no jobs: KubeRay asks for its RayJob's by id.
func (d *Dashboard) ListJobs(context.Context) (*[]utiltypes.RayJobInfo, error) {
	return &[]utiltypes.RayJobInfo{}, nil
}

// SubmitJob takes the RayJob's job id: the job runs from its cluster's
// making, as GetJobInfo tells.
func (d *Dashboard) SubmitJob(_ context.Context, rayJob *rayv1.RayJob) (string, error) {
	return rayJob.Status.JobId, nil
}

func (d *Dashboard) SubmitJobReq(_ context.Context, req *utiltypes.RayJobRequest) (string, error) {
	if req.SubmissionId == "" {
		return "", errors.New("simulated by berth: a job is submitted with its submission id")
	}
	return req.SubmissionId, nil
}

func (d *Dashboard) GetJobLog(context.Context, string) (*string, error) {
	log := "simulated by berth: no Ray runs on a simulated node, so there is no log\n"
	return &log, nil
}

// StopJob and DeleteJob have nothing to stop: the simulated job is
// gone with its cluster.
func (d *Dashboard) StopJob(context.Context, string) error   { return nil }
func (d *Dashboard) DeleteJob(context.Context, string) error { return nil }
