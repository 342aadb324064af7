package kubernetes

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/fileops"
)

// Where the pod's volumes are, in the container that prepares them and in
// the sandbox's.
const (
	containerName = "sandbox"
	helperDir     = "/.runner"
	helperPath    = helperDir + "/h"
	// The workspace and the home are subdirectories of their volumes,
	// made by the sandbox user before the sandbox starts, so that the
	// user owns them (a volume's own directory belongs to root).
	workSub = "w"
	homeSub = "h"
)

// helperVolumeSize bounds the helper's memory-backed volume.
const helperVolumeSize = 256 << 20

func ptr[T any](v T) *T { return &v }

// podSpec is the hardened pod of one sandbox.
func (b *Backend) podSpec(cfg sandbox.Config, name string, deadline time.Time) *corev1.Pod {
	secs := int64(math.Ceil(cfg.Lifetime.Seconds()))
	sc := &corev1.SecurityContext{
		RunAsUser:                ptr(int64(sandbox.UID)),
		RunAsGroup:               ptr(int64(sandbox.GID)),
		RunAsNonRoot:             ptr(true),
		AllowPrivilegeEscalation: ptr(false),
		Privileged:               ptr(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   ptr(cfg.Disk > 0),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	var env []corev1.EnvVar
	for _, kv := range cfg.CommandEnv() {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	res := resources(cfg)

	// Memory-backed (and sized) when the disk is limited; the node's
	// ordinary storage otherwise.
	scratch := func(name string, size int64) corev1.Volume {
		v := corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
		if size > 0 {
			v.EmptyDir.Medium = corev1.StorageMediumMemory
			v.EmptyDir.SizeLimit = resource.NewQuantity(size, resource.BinarySI)
		}
		return v
	}
	volumes := []corev1.Volume{scratch("workspace", cfg.Disk), scratch("home", cfg.Disk)}
	mounts := []corev1.VolumeMount{
		{Name: "workspace", MountPath: sandbox.Workdir, SubPath: workSub},
		{Name: "home", MountPath: sandbox.HomeDir, SubPath: homeSub},
	}
	initMounts := []corev1.VolumeMount{
		{Name: "workspace", MountPath: "/v/w"},
		{Name: "home", MountPath: "/v/h"},
	}
	prepare := fmt.Sprintf("set -e; umask 022; mkdir -m 0755 /v/w/%s; mkdir -m 0700 /v/h/%s", workSub, homeSub)
	if cfg.Disk > 0 {
		volumes = append(volumes, scratch("tmp", cfg.Disk), scratch("vartmp", cfg.Disk))
		mounts = append(mounts,
			corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"},
			corev1.VolumeMount{Name: "vartmp", MountPath: "/var/tmp"})
	}
	var initEnv []corev1.EnvVar
	if len(cfg.CACerts) > 0 {
		// Written before the sandbox starts, mounted read-only: the
		// sandbox user can read the bundle but not change it.
		volumes = append(volumes, scratch("ca", 16<<20))
		mounts = append(mounts, corev1.VolumeMount{Name: "ca", MountPath: path.Dir(sandbox.CABundle), ReadOnly: true})
		initMounts = append(initMounts, corev1.VolumeMount{Name: "ca", MountPath: "/v/ca"})
		prepare += "; sh -c \"$0\" runner-ca /v/ca/" + path.Base(sandbox.CABundle)
		for _, b := range sandbox.ImageCABundles {
			prepare += " " + b
		}
		initEnv = append(initEnv, corev1.EnvVar{Name: fileops.CACertsEnv, Value: string(cfg.CACerts)})
	}
	if cfg.Network == "none" || b.channelWanted() {
		volumes = append(volumes, scratch("runner", helperVolumeSize))
		mounts = append(mounts, corev1.VolumeMount{Name: "runner", MountPath: helperDir})
	}
	initCmd := []string{"sh", "-c", prepare}
	if len(cfg.CACerts) > 0 {
		initCmd = append(initCmd, fileops.CACertsFileScript)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       b.namespace,
			Labels:          labels(cfg, name),
			Annotations:     annotations(cfg, b.owner, deadline),
			OwnerReferences: b.ownerRefs(),
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         ptr(secs),
			TerminationGracePeriodSeconds: ptr(int64(1)),
			AutomountServiceAccountToken:  ptr(false),
			EnableServiceLinks:            ptr(false),
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			ShareProcessNamespace:         ptr(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsUser:      ptr(int64(sandbox.UID)),
				RunAsGroup:     ptr(int64(sandbox.GID)),
				RunAsNonRoot:   ptr(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Volumes: volumes,
			InitContainers: []corev1.Container{{
				Name: "prepare", Image: cfg.Image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: initCmd, Env: initEnv, SecurityContext: sc, Resources: res, VolumeMounts: initMounts,
			}},
			Containers: []corev1.Container{{
				Name:            containerName,
				Image:           cfg.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				// PID 1 is a sleep that ends at the deadline: the sandbox
				// ends by itself even if runner is killed, as
				// activeDeadlineSeconds ends the pod.
				Command:         []string{"sleep", strconv.FormatInt(secs, 10)},
				WorkingDir:      sandbox.Workdir,
				Env:             env,
				SecurityContext: sc,
				Resources:       res,
				VolumeMounts:    mounts,
			}},
		},
	}
	if cfg.Runtime != "" {
		pod.Spec.RuntimeClassName = ptr(cfg.Runtime)
	}
	return pod
}

// resources are the requests and limits of Config: memory and ephemeral
// storage are requested as much as the limit; CPU a quarter of it, so that
// sandboxes share a node's cores as they share a Docker host's.
func resources(cfg sandbox.Config) corev1.ResourceRequirements {
	cpu := resource.NewMilliQuantity(int64(math.Ceil(cfg.CPUs*1000)), resource.DecimalSI)
	cpuReq := resource.NewMilliQuantity(max(int64(math.Ceil(cfg.CPUs*250)), 10), resource.DecimalSI)
	mem := resource.NewQuantity(cfg.Memory, resource.BinarySI)
	r := corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: *cpu, corev1.ResourceMemory: *mem},
		Requests: corev1.ResourceList{corev1.ResourceCPU: *cpuReq, corev1.ResourceMemory: *mem},
	}
	// What the sandbox writes lives in memory with a disk limit; the
	// node's storage holds only the container's logs then.
	eph := resource.NewQuantity(64<<20, resource.BinarySI)
	if cfg.Disk < 0 {
		eph = resource.NewQuantity(sandbox.DefaultDisk, resource.BinarySI)
	}
	r.Limits[corev1.ResourceEphemeralStorage] = *eph
	r.Requests[corev1.ResourceEphemeralStorage] = *eph
	return r
}

// policySpec denies every egress and every ingress of the pod name: a
// policy of types Egress and Ingress with no rule allows nothing. Ingress
// too, or another pod could connect in and use the connection both ways.
func (b *Backend) policySpec(cfg sandbox.Config, name string, deadline time.Time) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       b.namespace,
			Labels:          labels(cfg, name),
			Annotations:     annotations(cfg, b.owner, deadline),
			OwnerReferences: b.ownerRefs(),
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelSandbox: name}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress, networkingv1.PolicyTypeIngress},
		},
	}
}

// ownerRefs makes runner's own pod the owner of what it creates, when it
// runs in the cluster: the garbage collector removes them with it.
func (b *Backend) ownerRefs() []metav1.OwnerReference {
	if b.opt.OwnerPod == nil {
		return nil
	}
	return []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Pod",
		Name: b.opt.OwnerPod.Name, UID: types.UID(b.opt.OwnerPod.UID),
	}}
}
