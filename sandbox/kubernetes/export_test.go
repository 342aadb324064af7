package kubernetes

// ChannelPID is the helper's process id in the pod while the channel is
// up, 0 otherwise.
func (s *Sandbox) ChannelPID() int {
	if c := s.link().Client(); c != nil {
		return c.HelperPID()
	}
	return 0
}
