package dockernet_test

import (
	"os"
	"testing"

	"github.com/runner-dev/runner/internal/dockertest"
)

func TestMain(m *testing.M) { os.Exit(dockertest.Main(m)) }
