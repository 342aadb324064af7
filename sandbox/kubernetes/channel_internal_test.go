package kubernetes

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/dockertest"
	"github.com/runner-dev/runner/sandbox"
	"github.com/runner-dev/runner/sandbox/channel"
	"github.com/runner-dev/runner/sandbox/cmdwrap"
)

// The start script, run by the image's sh as the sandbox user, writes the
// helper from its stdin and then serves the channel on that same stdin and
// stdout: head takes the helper's bytes and no more. A container of the
// busybox test image stands in for the pod (docker run -i for the exec,
// a writable memory-backed helperDir for the pod's volume), so that the
// script is checked without a cluster.
func TestChannelStartScript(t *testing.T) {
	helper := dockertest.ChannelHelper(t)
	img := dockertest.Busybox(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin, err := os.Open(helper)
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	st, err := bin.Stat()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "docker", "run", "--rm", "-i", "--network", "none", "-u", "1000:1000",
		"--tmpfs", helperDir+":exec,mode=1777", img,
		"sh", "-c", channelStart, "runner-channel", strconv.FormatInt(st.Size(), 10))
	inR, inW := io.Pipe()
	cmd.Stdin = io.MultiReader(bin, inR)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr tail
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := channel.Dial(ctx, out, inW)
	if err != nil {
		inR.Close()
		cmd.Wait()
		t.Fatalf("Dial: %v (stderr %q)", err, stderr.String())
	}
	res, err := c.Exec(ctx, "id -u; stat -c '%u %a %s' "+helperPath, "/tmp", cmdwrap.NewMark(), sandbox.ExecOptions{Timeout: 30 * time.Second, MaxOutput: 4096})
	if err != nil {
		t.Fatalf("Exec through the channel: %v", err)
	}
	want := "1000\n1000 555 " + strconv.FormatInt(st.Size(), 10) + "\n"
	if res.ExitCode != 0 || res.Stdout != want {
		t.Errorf("through the channel: %+v; want exit 0 and stdout %q (the sandbox user; the helper whole, read-only)", res, want)
	}
	// Closing the channel closes the helper's stdin: it exits.
	c.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("the helper did not end with its input: %v (stderr %q)", err, stderr.String())
	}
}
