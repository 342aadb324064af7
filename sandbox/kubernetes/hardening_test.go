package kubernetes_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/runner-dev/runner/internal/k8stest"
	"github.com/runner-dev/runner/sandbox"
)

// clientset is a client of the test cluster of its own: the tests read
// back what the backend made through it, not through the backend.
func clientset(t testing.TB) k8s.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", k8stest.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := k8s.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// The pod as created, read back from the API server, carries every setting
// of the hardening.
func TestPodSpecIsHardened(t *testing.T) {
	b := k8stest.Backend(t)
	sb := start(t, b, sandbox.Config{Memory: 256 << 20, Disk: 32 << 20, CPUs: 0.5, Lifetime: 10 * time.Minute, CACerts: []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")})
	pod, err := clientset(t).CoreV1().Pods(b.Namespace()).Get(context.Background(), sb.Name(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := pod.Spec
	check := func(what string, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("%s does not hold", what)
		}
	}
	check("automountServiceAccountToken false", s.AutomountServiceAccountToken != nil && !*s.AutomountServiceAccountToken)
	check("enableServiceLinks false", s.EnableServiceLinks != nil && !*s.EnableServiceLinks)
	check("no host namespaces", !s.HostNetwork && !s.HostPID && !s.HostIPC)
	check("restartPolicy Never", s.RestartPolicy == corev1.RestartPolicyNever)
	check("activeDeadlineSeconds 600", s.ActiveDeadlineSeconds != nil && *s.ActiveDeadlineSeconds == 600)
	check("pod runAsNonRoot", s.SecurityContext != nil && s.SecurityContext.RunAsNonRoot != nil && *s.SecurityContext.RunAsNonRoot)
	for _, c := range append(append([]corev1.Container(nil), s.InitContainers...), s.Containers...) {
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("container %s: no security context", c.Name)
			continue
		}
		check(c.Name+": runAsUser 1000", sc.RunAsUser != nil && *sc.RunAsUser == sandbox.UID)
		check(c.Name+": runAsGroup 1000", sc.RunAsGroup != nil && *sc.RunAsGroup == sandbox.GID)
		check(c.Name+": runAsNonRoot", sc.RunAsNonRoot != nil && *sc.RunAsNonRoot)
		check(c.Name+": allowPrivilegeEscalation false", sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation)
		check(c.Name+": not privileged", sc.Privileged == nil || !*sc.Privileged)
		check(c.Name+": all capabilities dropped", sc.Capabilities != nil && len(sc.Capabilities.Add) == 0 && len(sc.Capabilities.Drop) == 1 && sc.Capabilities.Drop[0] == "ALL")
		check(c.Name+": seccomp RuntimeDefault", sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault)
		check(c.Name+": read-only root", sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem)
		check(c.Name+": imagePullPolicy IfNotPresent", c.ImagePullPolicy == corev1.PullIfNotPresent)
		lim := c.Resources.Limits
		check(c.Name+": memory limit 256Mi", lim.Memory().Value() == 256<<20)
		check(c.Name+": cpu limit 500m", lim.Cpu().MilliValue() == 500)
		check(c.Name+": ephemeral-storage limit", !lim.StorageEphemeral().IsZero())
	}
	mounted := map[string]bool{}
	for _, m := range s.Containers[0].VolumeMounts {
		mounted[m.MountPath] = true
	}
	for _, v := range s.Volumes {
		if v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory || v.EmptyDir.SizeLimit == nil {
			t.Errorf("volume %s: %+v, want a memory-backed emptyDir with a size limit", v.Name, v.VolumeSource)
		}
	}
	for _, p := range []string{sandbox.Workdir, "/tmp", "/var/tmp", sandbox.HomeDir} {
		check("a volume at "+p, mounted[p])
	}
	for _, l := range []string{"dev.runner.tool", "dev.runner.run", "dev.runner.task"} {
		check("label "+l, pod.Labels[l] != "")
	}
	check("owner annotations", pod.Annotations["dev.runner.owner.pid"] != "" && pod.Annotations["dev.runner.deadline"] != "")
	// And from inside: the workspace and the home belong to the sandbox
	// user, the certificate bundle cannot be changed.
	res := run(t, sb, `stat -c '%u %a' /workspace $HOME; cat /tmp/.runner-ca/ca-certificates.crt >/dev/null && echo readable; echo x >> /tmp/.runner-ca/ca-certificates.crt 2>/dev/null || echo refused`, sandbox.ExecOptions{})
	if want := "1000 755\n1000 700\nreadable\nrefused\n"; res.Stdout != want {
		t.Errorf("inside: %q, want %q (stderr %q)", res.Stdout, want, res.Stderr)
	}
}

// An image the cluster cannot get is an ImageError, quickly, and nothing
// is left behind.
func TestMissingImageIsImageError(t *testing.T) {
	b := k8stest.Backend(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	begin := time.Now()
	_, startErr := b.Start(ctx, sandbox.Config{Image: "runner-no-such-image:1", Network: "bridge", RunID: runID, TaskID: "missing-image"})
	var ie *sandbox.ImageError
	if !errors.As(startErr, &ie) || !errors.Is(startErr, sandbox.ErrImageNotFound) {
		t.Fatalf("Start: %v, want an ImageError", startErr)
	}
	if took := time.Since(begin); took > 45*time.Second {
		t.Errorf("took %s to tell", took)
	}
	pods, err := clientset(t).CoreV1().Pods(b.Namespace()).List(ctx, metav1.ListOptions{LabelSelector: "dev.runner.task=missing-image"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			t.Errorf("pod %s left behind", p.Name)
		}
	}
	if !strings.Contains(startErr.Error(), "runner-no-such-image:1") {
		t.Errorf("error %q does not name the image", startErr)
	}
}
