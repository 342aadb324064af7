package sandbox

// CABundle is where a sandbox given Config.CACerts keeps the bundle it
// trusts: the image's own system bundle (the first found of
// ImageCABundles) followed by the extra certificates. It is written by
// root at the start, before any command runs, in a memory-backed /tmp
// (the root filesystem is read-only, and the image may be any distribution);
// the sandbox user can read it but not change it.
const CABundle = "/tmp/.runner-ca/ca-certificates.crt"

// ImageCABundles are the places distributions keep their system bundle,
// in the order they are looked for in the image.
var ImageCABundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Alpine, Arch
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL
	"/etc/ssl/ca-bundle.pem",                            // openSUSE
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // RHEL, newer
	"/etc/ssl/cert.pem",                                 // Alpine, macOS-like
}

// caEnv points the usual tools at CABundle: OpenSSL and Go
// (SSL_CERT_FILE), curl, git, Python requests and pip, Node.js and npm
// (which add it to their own list), and cargo.
var caEnv = []string{
	"SSL_CERT_FILE=" + CABundle,
	"CURL_CA_BUNDLE=" + CABundle,
	"GIT_SSL_CAINFO=" + CABundle,
	"REQUESTS_CA_BUNDLE=" + CABundle,
	"PIP_CERT=" + CABundle,
	"NODE_EXTRA_CA_CERTS=" + CABundle,
	"CARGO_HTTP_CAINFO=" + CABundle,
}
