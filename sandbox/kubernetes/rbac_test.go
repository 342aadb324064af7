package kubernetes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/runner-dev/runner/internal/k8stest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/kubernetes"
)

// An account whose Role lacks pods/exec gets an error that names the verb,
// the resource and the namespace, and the pod it made is deleted.
func TestRBACRefusalNamesWhatIsMissing(t *testing.T) {
	cs := clientset(t)
	ns := k8stest.Namespace()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := "runner-test-noexec-" + sandbox.RandomID()
	del := metav1.DeleteOptions{}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.CoreV1().ServiceAccounts(ns).Delete(context.Background(), name, del) })
	var rules []rbacv1.PolicyRule
	for _, p := range kubernetes.Needed {
		if p.Subresource == "exec" || p.Resource == "runtimeclasses" {
			continue
		}
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{p.Group}, Resources: []string{p.Resource}, Verbs: []string{p.Verb}})
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.RbacV1().Roles(ns).Delete(context.Background(), name, del) })
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.RbacV1().RoleBindings(ns).Delete(context.Background(), name, del) })
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := clientcmd.BuildConfigFromFlags("", k8stest.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData, CertificateAuthority: admin.CAFile}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "sa", Namespace: ns}
	cfg.CurrentContext = "c"
	path := t.TempDir() + "/kubeconfig"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	opt := k8stest.Options(t)
	opt.Kubeconfig = path
	b, err := kubernetes.Connect(ctx, opt)
	if err != nil {
		t.Fatalf("Connect with a Role that allows listing pods: %v", err)
	}
	_, err = b.Start(ctx, sandbox.Config{Image: k8stest.Image(t), Network: "bridge", RunID: runID, TaskID: "noexec"})
	if err == nil {
		t.Fatal("Start without pods/exec succeeded")
	}
	for _, want := range []string{"RBAC forbids", "create", "pods/exec", "namespace " + ns} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "dev.runner.task=noexec"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			t.Errorf("pod %s left behind", p.Name)
		}
	}
}

func ptr[T any](v T) *T { return &v }
