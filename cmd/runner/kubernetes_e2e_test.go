package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/cli"
	"github.com/runner-dev/runner/internal/fakellm"
	"github.com/runner-dev/runner/internal/k8stest"
	"github.com/runner-dev/runner/tasks"
)

// The Kubernetes end-to-end tests run the built binary with --backend
// kubernetes against the test cluster (see internal/k8stest), and read what
// it leaves with the git CLI and kubectl.

// kubectl runs kubectl on the test cluster's namespace.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	args = append([]string{"--kubeconfig", k8stest.Kubeconfig(t), "--namespace", k8stest.Namespace()}, args...)
	out, err := exec.Command("kubectl", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// ownedObjects lists the pods or network policies (kind) runner made for
// the runner process pid, as kubectl sees them: "name phase" lines.
func ownedObjects(t *testing.T, kind string, pid int) []string {
	t.Helper()
	out := kubectl(t, "get", kind, "-l", "dev.runner.tool=runner", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.metadata.annotations.dev\.runner\.owner\.pid} {.status.phase}{"\n"}{end}`)
	var mine []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[1] == strconv.Itoa(pid) {
			mine = append(mine, strings.Join(append(f[:1:1], f[2:]...), " "))
		}
	}
	return mine
}

// kubeRunnerCmd prepares the binary with the model endpoint and the test
// cluster in its environment.
func kubeRunnerCmd(t *testing.T, srv *fakellm.Server, args ...string) *exec.Cmd {
	cmd := runnerCmd(t, srv, args...)
	cmd.Env = append(cmd.Env, "KUBECONFIG="+k8stest.Kubeconfig(t))
	return cmd
}

// kubeFlags are the flags that put a command on the test cluster.
func kubeFlags(t *testing.T) []string {
	return []string{"--backend", "kubernetes", "--namespace", k8stest.Namespace(), "--egress-probe", k8stest.OutsideAddr(t)}
}

// A queue of tasks runs on the cluster, two at a time: each task's
// commands run in a pod of its own that kubectl sees while the task runs,
// each result is committed on its branch, and no pod or policy is left.
func TestRunOnKubernetes(t *testing.T) {
	image := k8stest.Image(t)
	repo, head := sourceRepo(t, map[string]string{"README.md": "# kube\n"})
	var mu sync.Mutex
	seen := map[string]string{} // task → what kubectl said of the pod its hostname names
	srv := fakellm.New(t)
	srv.Forever(fakellm.Func(func(r fakellm.Request) fakellm.Turn {
		fields := strings.Fields(r.Messages[1].Content)
		id := strings.TrimSuffix(fields[len(fields)-1], ".")
		var results []string
		for _, m := range r.Messages {
			if m.Role == "tool" {
				results = append(results, m.Content)
			}
		}
		switch len(results) {
		case 0:
			return fakellm.ToolCall("run_command", `{"command":"hostname"}`).WithUsage(100, 10, 0)
		case 1:
			// The task's sandbox is running now: its hostname is its pod's name.
			out, err := exec.Command("kubectl", "--kubeconfig", k8stest.Kubeconfig(t), "--namespace", k8stest.Namespace(),
				"get", "pods", "-l", "dev.runner.task="+id, "-o", `jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}`).CombinedOutput()
			mu.Lock()
			seen[id] = fmt.Sprintf("kubectl: %s (err %v); hostname: %s", strings.TrimSpace(string(out)), err, results[0])
			for _, name := range strings.Fields(string(out)) {
				if err == nil && strings.Contains(results[0], name) {
					seen[id] = "ok"
				}
			}
			mu.Unlock()
			return fakellm.ToolCall("write_file", fmt.Sprintf(`{"path":"%s.txt","content":"%s\n"}`, id, id)).WithUsage(100, 10, 0)
		}
		return complete("done").WithUsage(100, 10, 0)
	}))
	ids := []string{"kube-1", "kube-2", "kube-3", "kube-4"}
	var list strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&list, "  - {id: %s, prompt: \"Write the file of %s.\"}\n", id, id)
	}
	file := writeTaskFile(t, fmt.Sprintf(`
defaults:
  backend: kubernetes
  repo: %s
  image: %s
  network: bridge
tasks:
%s`, repo, image, list.String()))
	out := filepath.Join(t.TempDir(), "out")

	cmd := kubeRunnerCmd(t, srv, append([]string{"run", file, "--out", out, "-j", "2"}, kubeFlags(t)[2:]...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cmdResult{stdout: stdout.String(), stderr: stderr.String()}
	if exit, ok := err.(*exec.ExitError); ok {
		res.code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if res.code != cli.ExitOK {
		t.Fatalf("runner run --backend kubernetes: %s", res)
	}
	results := byID(readResultLines(t, out))
	for _, id := range ids {
		if r := results[id]; r.Status != tasks.StatusSucceeded {
			t.Errorf("%s: %+v", id, r)
		}
		if got := gitCLI(t, repo, "show", "agent/"+id+":"+id+".txt"); got != id {
			t.Errorf("agent/%s holds %q", id, got)
		}
		if seen[id] != "ok" {
			t.Errorf("%s did not run in a pod of the cluster: %s", id, seen[id])
		}
	}
	userRepoUnchanged(t, repo, head)
	if left := append(ownedObjects(t, "pods", pid), ownedObjects(t, "networkpolicies", pid)...); len(left) > 0 {
		t.Errorf("kubectl lists the run's objects after it ended: %v", left)
	}
	noLeftovers(t, pid) // and it made no Docker container
}

// A runner killed with SIGKILL while its sandboxes run leaves its pods
// and the egress policy of the one with network none; runner cleanup
// --backend kubernetes removes them, and kubectl then lists no pod and no
// policy of that run.
func TestKilledRunnerOnKubernetesIsCleanedUp(t *testing.T) {
	image := k8stest.Image(t)
	repo, _ := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	release := make(chan struct{})
	srv := fakellm.New(t)
	srv.Forever(fakellm.Func(func(r fakellm.Request) fakellm.Turn {
		<-release // every task waits on its first call, its sandbox running
		return fakellm.Status(500, `{"error":{"message":"gone"}}`)
	}))
	defer close(release)
	file := writeTaskFile(t, fmt.Sprintf(`
defaults: {repo: %s, image: %s, network: bridge}
tasks:
  - {id: held-1, prompt: "Wait."}
  - {id: held-2, prompt: "Wait too.", network: none}
`, repo, image))
	out := filepath.Join(t.TempDir(), "out")
	cmd := kubeRunnerCmd(t, srv, append([]string{"run", file, "--out", out, "-j", "2"}, kubeFlags(t)...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Kill() })
	waitUntil(t, 3*time.Minute, "both sandboxes' pods to run", func() bool {
		running := 0
		for _, p := range ownedObjects(t, "pods", pid) {
			if strings.HasSuffix(p, " Running") {
				running++
			}
		}
		return running == 2 && len(srv.Requests()) >= 2
	})
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if n := len(ownedObjects(t, "pods", pid)); n != 2 {
		t.Fatalf("kubectl lists %d pods of the killed run, want its 2 (stderr: %s)", n, stderr.String())
	}
	// held-2 runs with network: none, held by a deny-all egress policy.
	if n := len(ownedObjects(t, "networkpolicies", pid)); n != 1 {
		t.Fatalf("kubectl lists %d network policies of the killed run, want held-2's (stderr: %s)", n, stderr.String())
	}

	res := runBinaryEnv(t, []string{"KUBECONFIG=" + k8stest.Kubeconfig(t)}, append([]string{"cleanup", "--json"}, kubeFlags(t)[:4]...)...)
	if res.code != cli.ExitOK {
		t.Fatalf("runner cleanup --backend kubernetes: %s", res)
	}
	var rep struct {
		Removed []struct{ Task, Why string }
	}
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("cleanup --json: %v\n%s", err, res.stdout)
	}
	tasksRemoved := map[string]bool{}
	for _, r := range rep.Removed {
		tasksRemoved[r.Task] = true
	}
	if !tasksRemoved["held-1"] || !tasksRemoved["held-2"] {
		t.Errorf("cleanup removed %+v, want both tasks' sandboxes", rep.Removed)
	}
	waitUntil(t, 2*time.Minute, "the killed run's pods and policies to be gone", func() bool {
		return len(ownedObjects(t, "pods", pid))+len(ownedObjects(t, "networkpolicies", pid)) == 0
	})
}

// runBinaryEnv runs the built binary with args and env added to the
// environment.
func runBinaryEnv(t *testing.T, env []string, args ...string) cmdResult {
	t.Helper()
	cmd := exec.Command(runnerBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cmdResult{stdout: stdout.String(), stderr: stderr.String()}
	if exit, ok := err.(*exec.ExitError); ok {
		res.code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return res
}

// runner run in a pod (RUNNER_POD_NAME and RUNNER_POD_UID, as the downward
// API gives them) makes that pod the owner of its sandboxes' pods: when the
// owner pod goes, the cluster's garbage collector deletes them, whatever
// runner does.
func TestOwnerPodCollectsSandboxes(t *testing.T) {
	image := k8stest.Image(t)
	owner := fmt.Sprintf("runner-owner-%d", os.Getpid())
	kubectl(t, "run", owner, "--image", image, "--image-pull-policy", "IfNotPresent", "--restart", "Never",
		"--labels", "app=runner-owner-test", "--command", "--", "sleep", "600")
	t.Cleanup(func() {
		exec.Command("kubectl", "--kubeconfig", k8stest.Kubeconfig(t), "--namespace", k8stest.Namespace(),
			"delete", "pod", owner, "--ignore-not-found", "--wait=false").Run()
	})
	uid := kubectl(t, "get", "pod", owner, "-o", "jsonpath={.metadata.uid}")

	repo, _ := sourceRepo(t, map[string]string{"a.txt": "a\n"})
	release := make(chan struct{})
	srv := fakellm.New(t)
	srv.Forever(fakellm.Func(func(r fakellm.Request) fakellm.Turn {
		<-release
		return fakellm.Status(500, `{"error":{"message":"gone"}}`)
	}))
	defer close(release)
	file := writeTaskFile(t, fmt.Sprintf("defaults: {repo: %s, image: %s, network: bridge}\ntasks:\n  - {id: owned, prompt: \"Wait.\"}\n", repo, image))
	cmd := kubeRunnerCmd(t, srv, append([]string{"run", file, "--out", filepath.Join(t.TempDir(), "out")}, kubeFlags(t)...)...)
	cmd.Env = append(cmd.Env, "RUNNER_POD_NAME="+owner, "RUNNER_POD_UID="+uid)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var sandboxPod string
	waitUntil(t, 3*time.Minute, "the sandbox's pod to run", func() bool {
		for _, p := range ownedObjects(t, "pods", pid) {
			if name, ok := strings.CutSuffix(p, " Running"); ok {
				sandboxPod = name
			}
		}
		return sandboxPod != ""
	})
	refs := kubectl(t, "get", "pod", sandboxPod, "-o", `jsonpath={range .metadata.ownerReferences[*]}{.kind}/{.name}/{.uid}{"\n"}{end}`)
	if refs != "Pod/"+owner+"/"+uid {
		t.Fatalf("the sandbox pod's owner references = %q, want Pod/%s/%s", refs, owner, uid)
	}
	// runner is stopped where it stands, so that only the cluster can
	// delete the sandbox now.
	cmd.Process.Signal(syscall.SIGSTOP)
	defer cmd.Process.Signal(syscall.SIGCONT)
	kubectl(t, "delete", "pod", owner, "--wait=false")
	waitUntil(t, 3*time.Minute, "the garbage collector to delete the sandbox's pod", func() bool {
		return len(ownedObjects(t, "pods", pid)) == 0
	})
}
