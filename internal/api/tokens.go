package api

import "net/http"

// Placeholder handlers: the resource's work is in progress.
func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) error   { return errNotImplemented }
func (s *Server) searchTokens(w http.ResponseWriter, r *http.Request) error { return errNotImplemented }
func (s *Server) getToken(w http.ResponseWriter, r *http.Request) error     { return errNotImplemented }
func (s *Server) createToken(w http.ResponseWriter, r *http.Request) error  { return errNotImplemented }
func (s *Server) updateToken(w http.ResponseWriter, r *http.Request) error  { return errNotImplemented }
func (s *Server) deleteToken(w http.ResponseWriter, r *http.Request) error  { return errNotImplemented }
