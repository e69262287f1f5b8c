package api

import "net/http"

// Placeholder handlers: the resource's work is in progress.
func (s *Server) listChannels(w http.ResponseWriter, r *http.Request) error { return errNotImplemented }
func (s *Server) searchChannels(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) channelModels(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) testChannel(w http.ResponseWriter, r *http.Request) error { return errNotImplemented }
func (s *Server) getChannel(w http.ResponseWriter, r *http.Request) error  { return errNotImplemented }
func (s *Server) createChannel(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) updateChannel(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) deleteChannel(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
func (s *Server) listGroups(w http.ResponseWriter, r *http.Request) error { return errNotImplemented }
func (s *Server) availableModels(w http.ResponseWriter, r *http.Request) error {
	return errNotImplemented
}
