package api

import (
	"net/http"

	"github.com/modelgate/modelgate/internal/cluster/owner"
	"github.com/modelgate/modelgate/internal/cluster/replicate"
	"github.com/modelgate/modelgate/internal/httpx"
)

// routes lists every /api route in the order of the spec's tables, with the
// least role each needs (spec: Authentication, permission levels).
func (s *Server) routes(mux *http.ServeMux) {
	s.handle(mux, "GET /api/status", levelGuest, s.status)
	s.handle(mux, "GET /api/openapi.yaml", levelGuest, s.openAPI)

	// Users
	s.handle(mux, "POST /api/user/register", levelGuest, s.register)
	s.handle(mux, "POST /api/user/login", levelGuest, s.login)
	s.handle(mux, "GET /api/verification", levelGuest, sameOriginOnly(s.sendVerification))
	s.handle(mux, "GET /api/reset_password", levelGuest, sameOriginOnly(s.sendPasswordReset))
	s.handle(mux, "POST /api/user/reset", levelGuest, s.resetPassword)
	s.handle(mux, "GET /api/oauth/email/bind", levelUser, sameOriginOnly(s.bindEmail))
	s.handle(mux, "GET /api/oauth/state", levelGuest, s.oauthState)
	s.handle(mux, "GET /api/oauth/oidc/start", levelGuest, s.oidcStart)
	s.handle(mux, "GET /api/oauth/oidc", levelGuest, sameOriginOnly(s.oidcCallback))
	s.handle(mux, "GET /api/oauth/github", levelGuest, sameOriginOnly(s.githubCallback))
	s.handle(mux, "GET /api/user/logout", levelGuest, sameOriginOnly(s.logout))
	s.handle(mux, "POST /api/user/logout", levelGuest, s.logout)
	s.handle(mux, "GET /api/user/self", levelUser, s.getSelf)
	s.handle(mux, "PUT /api/user/self", levelUser, s.updateSelf)
	s.handle(mux, "DELETE /api/user/self", levelUser, s.deleteSelf)
	s.handle(mux, "GET /api/user/dashboard", levelUser, s.userDashboard)
	s.handle(mux, "GET /api/user/token", levelUser, sameOriginOnly(s.generateAccessToken))
	s.handle(mux, "POST /api/user/token", levelUser, s.generateAccessToken)
	s.handle(mux, "GET /api/user/aff", levelUser, s.getAffCode)
	s.handle(mux, "POST /api/user/topup", levelUser, s.redeemCode)
	s.handle(mux, "GET /api/user/available_models", levelUser, s.availableModels)
	s.handle(mux, "GET /api/user/{$}", levelAdmin, s.listUsers)
	s.handle(mux, "GET /api/user/search", levelAdmin, s.searchUsers)
	s.handle(mux, "GET /api/user/{id}", levelAdmin, s.getUser)
	s.handle(mux, "GET /api/user/{id}/tokens", levelAdmin, s.listUserTokens)
	s.handle(mux, "POST /api/user/{$}", levelAdmin, s.createUser)
	s.handle(mux, "POST /api/user/manage", levelAdmin, s.manageUser)
	s.handle(mux, "PUT /api/user/{$}", levelAdmin, s.updateUser)
	s.handle(mux, "DELETE /api/user/{id}", levelAdmin, s.deleteUser)
	s.handle(mux, "POST /api/topup", levelAdmin, s.adminTopup)

	// API keys: the caller's own
	s.handle(mux, "GET /api/token/{$}", levelUser, s.listTokens)
	s.handle(mux, "GET /api/token/search", levelUser, s.searchTokens)
	s.handle(mux, "GET /api/token/{id}", levelUser, s.getToken)
	s.handle(mux, "POST /api/token/{$}", levelUser, s.createToken)
	s.handle(mux, "PUT /api/token/{$}", levelUser, s.updateToken)
	s.handle(mux, "DELETE /api/token/{id}", levelUser, s.deleteToken)

	// Channels and groups
	s.handle(mux, "GET /api/channel/{$}", levelAdmin, s.listChannels)
	s.handle(mux, "GET /api/channel/search", levelAdmin, s.searchChannels)
	s.handle(mux, "GET /api/channel/models", levelAdmin, s.channelModels)
	s.handle(mux, "GET /api/channel/test/{id}", levelAdmin, sameOriginOnly(s.testChannel))
	s.handle(mux, "POST /api/channel/test/{id}", levelAdmin, s.testChannel)
	s.handle(mux, "GET /api/channel/breakers", levelAdmin, s.listBreakers)
	s.handle(mux, "GET /api/channel/breakers/{id}", levelAdmin, s.channelBreakers)
	s.handle(mux, "GET /api/channel/{id}", levelAdmin, s.getChannel)
	s.handle(mux, "POST /api/channel/{$}", levelAdmin, s.createChannel)
	s.handle(mux, "PUT /api/channel/{$}", levelAdmin, s.updateChannel)
	s.handle(mux, "DELETE /api/channel/{id}", levelAdmin, s.deleteChannel)
	s.handle(mux, "POST /api/channel/{id}/keys/{index}/enable", levelAdmin, s.enableChannelKey)
	s.handle(mux, "GET /api/group/{$}", levelAdmin, s.listGroups)

	// Admin dashboard
	s.handle(mux, "GET /api/admin/dashboard/overview", levelAdmin, s.dashboardOverview)
	s.handle(mux, "GET /api/admin/dashboard/charts", levelAdmin, s.dashboardCharts)
	s.handle(mux, "GET /api/admin/dashboard/top-users", levelAdmin, s.dashboardTopUsers)

	// Model price and group price
	s.handle(mux, "GET /api/model_price/{$}", levelRoot, s.listModelPrices)
	s.handle(mux, "POST /api/model_price/{$}", levelRoot, s.createModelPrice)
	s.handle(mux, "PUT /api/model_price/{$}", levelRoot, s.updateModelPrice)
	s.handle(mux, "DELETE /api/model_price/{id}", levelRoot, s.deleteModelPrice)
	s.handle(mux, "GET /api/group_price/{$}", levelRoot, s.listGroupPrices)
	s.handle(mux, "POST /api/group_price/{$}", levelRoot, s.createGroupPrice)
	s.handle(mux, "PUT /api/group_price/{$}", levelRoot, s.updateGroupPrice)
	s.handle(mux, "DELETE /api/group_price/{id}", levelRoot, s.deleteGroupPrice)

	// Logs
	s.handle(mux, "GET /api/log/{$}", levelAdmin, s.listLogs)
	s.handle(mux, "GET /api/log/self", levelUser, s.listSelfLogs)
	s.handle(mux, "GET /api/log/search", levelAdmin, s.searchLogs)
	s.handle(mux, "GET /api/log/self/search", levelUser, s.searchSelfLogs)
	s.handle(mux, "GET /api/log/stat", levelAdmin, s.logStat)
	s.handle(mux, "GET /api/log/self/stat", levelUser, s.selfLogStat)
	s.handle(mux, "DELETE /api/log/{$}", levelAdmin, s.deleteLogs)

	// Redemption codes
	s.handle(mux, "GET /api/redemption/{$}", levelAdmin, s.listRedemptions)
	s.handle(mux, "GET /api/redemption/search", levelAdmin, s.searchRedemptions)
	s.handle(mux, "GET /api/redemption/{id}", levelAdmin, s.getRedemption)
	s.handle(mux, "POST /api/redemption/{$}", levelAdmin, s.createRedemptions)
	s.handle(mux, "PUT /api/redemption/{$}", levelAdmin, s.updateRedemption)
	s.handle(mux, "DELETE /api/redemption/{id}", levelAdmin, s.deleteRedemption)

	// Plans
	s.handle(mux, "GET /api/plan/{$}", levelAdmin, s.listPlans)
	s.handle(mux, "GET /api/plan/search", levelAdmin, s.searchPlans)
	s.handle(mux, "GET /api/plan/list", levelUser, s.listedPlans)
	s.handle(mux, "GET /api/plan/{id}", levelAdmin, s.getPlan)
	s.handle(mux, "POST /api/plan/{$}", levelRoot, s.createPlan)
	s.handle(mux, "PUT /api/plan/{$}", levelRoot, s.updatePlan)
	s.handle(mux, "DELETE /api/plan/{id}", levelRoot, s.deletePlan)

	// Subscriptions. The literal self wins over {id}: ServeMux prefers the
	// more specific pattern.
	s.handle(mux, "GET /api/subscription/self", levelUser, s.selfSubscriptions)
	s.handle(mux, "GET /api/subscription/{id}/usage", levelUser, s.subscriptionUsageOf)
	s.handle(mux, "GET /api/subscription/{$}", levelAdmin, s.listSubscriptions)
	s.handle(mux, "GET /api/subscription/search", levelAdmin, s.searchSubscriptions)
	s.handle(mux, "GET /api/subscription/{id}", levelAdmin, s.getSubscription)
	s.handle(mux, "POST /api/subscription/{$}", levelAdmin, s.createSubscription)
	s.handle(mux, "PUT /api/subscription/{$}", levelAdmin, s.updateSubscription)
	s.handle(mux, "DELETE /api/subscription/{id}", levelAdmin, s.deleteSubscription)

	// Orders. Admin reads and marks orders; Root deletes them and runs the
	// test pay (docs/decisions/commerce.md).
	s.handle(mux, "POST /api/order/plan", levelUser, s.createPlanOrder)
	s.handle(mux, "GET /api/order/self", levelUser, s.listSelfOrders)
	s.handle(mux, "GET /api/order/self/{id}", levelUser, s.getSelfOrder)
	s.handle(mux, "POST /api/order/self/{id}/cancel", levelUser, s.cancelSelfOrder)
	s.handle(mux, "POST /api/order/self/{id}/pay", levelUser, s.paySelfOrder)
	s.handle(mux, "GET /api/order/{$}", levelAdmin, s.listOrders)
	s.handle(mux, "GET /api/order/search", levelAdmin, s.searchOrders)
	s.handle(mux, "GET /api/order/{id}", levelAdmin, s.getOrder)
	s.handle(mux, "PUT /api/order/{id}", levelAdmin, s.updateOrder)
	s.handle(mux, "DELETE /api/order/{id}", levelRoot, s.deleteOrder)
	s.handle(mux, "POST /api/order/{id}/test_pay", levelRoot, s.testPayOrder)
	s.handle(mux, "POST /api/payment/mobile_a/notify", levelGuest, s.notify("mobile_a"))
	s.handle(mux, "POST /api/payment/mobile_b/notify", levelGuest, s.notify("mobile_b"))
	s.handle(mux, "GET /api/payment/exceptions", levelAdmin, s.listPaymentExceptions)
	s.handle(mux, "PUT /api/payment/exceptions/{id}", levelAdmin, s.resolvePaymentException)

	// Top-up order and top-up settings
	s.handle(mux, "POST /api/topup/order", levelGuest, s.requireLogin(s.createTopupOrder))
	s.handle(mux, "GET /api/setting/topup", levelRoot, s.getTopupSettings)
	s.handle(mux, "PUT /api/setting/topup", levelRoot, s.updateTopupSettings)

	// Payment settings and status
	s.handle(mux, "GET /api/setting/payment", levelRoot, s.getPaymentSettings)
	s.handle(mux, "PUT /api/setting/payment/{method}", levelRoot, s.updatePaymentSetting)
	s.handle(mux, "GET /api/payment/status", levelGuest, s.paymentStatus)

	// Diagnostics
	s.handle(mux, "GET /api/diag/subscriptions", levelAdmin, s.diagSubscriptions)

	// Settlements the billing ledger parked (dead letters)
	s.handle(mux, "GET /api/billing/dead_letter/{$}", levelAdmin, s.listDeadLetters)
	s.handle(mux, "GET /api/ratelimit/status", levelAdmin, s.rateLimitStatus)
	s.handle(mux, "POST /api/billing/dead_letter/{id}/replay", levelRoot, s.replayDeadLetter)

	// Audit trail of admin actions
	s.handle(mux, "GET /api/audit/{$}", levelRoot, s.listAudit)

	// Runtime options
	s.handle(mux, "GET /api/option/{$}", levelRoot, s.listOptions)
	s.handle(mux, "PUT /api/option/{$}", levelRoot, s.updateOption)

	// Cluster. Every cluster route answers "cluster mode is off" without
	// CLUSTER_NODE_ID. The internal routes (/api/cluster/…) are opened by
	// no session: every one goes through clusterPeer, which checks the
	// cluster secret and the sender's signature (docs/cluster.md, Security);
	// handle refuses to register one any other way.
	s.internal(mux, "POST /api/cluster/ping", anyPinger, httpx.MaxBodyBytes, s.clusterPing)
	s.internal(mux, "POST /api/cluster/sync", knownPeers, replicate.MaxBatchBytes, s.clusterSync)
	s.internal(mux, "POST /api/cluster/snapshot", knownPeers, httpx.MaxBodyBytes, s.clusterSnapshot)
	s.internal(mux, "POST /api/cluster/redeem", knownPeers, owner.MaxBodyBytes, s.clusterRedeem)
	s.internal(mux, "POST /api/cluster/activate", knownPeers, owner.MaxBodyBytes, s.clusterActivate)
	s.internal(mux, "POST /api/cluster/set_quota", knownPeers, owner.MaxBodyBytes, s.clusterSetQuota)
	s.internal(mux, "POST /api/cluster/grant", knownPeers, owner.MaxBodyBytes, s.clusterGrant)
	s.internal(mux, "POST /api/cluster/digest", knownPeers, httpx.MaxBodyBytes, s.clusterDigest)
	s.handle(mux, "GET /api/cluster/consistency", levelRoot, sameOriginOnly(s.clusterOn(s.clusterConsistency)))
	s.handle(mux, "GET /api/cluster/failed_events", levelRoot, s.clusterOn(s.listFailedEvents))
	s.handle(mux, "DELETE /api/cluster/failed_events/{id}", levelRoot, s.clusterOn(s.dismissFailedEvent))
	s.handle(mux, "GET /api/cluster/parked_events", levelRoot, s.clusterOn(s.listParkedEvents))
	s.handle(mux, "GET /api/cluster_node/{$}", levelRoot, s.clusterOn(s.listClusterNodes))
	s.handle(mux, "GET /api/cluster_node/ping/{id}", levelRoot, sameOriginOnly(s.clusterOn(s.pingClusterNode)))
	s.handle(mux, "GET /api/cluster_node/{id}", levelRoot, s.clusterOn(s.getClusterNode))
	s.handle(mux, "POST /api/cluster_node/{$}", levelRoot, s.clusterOn(s.createClusterNode))
	s.handle(mux, "PUT /api/cluster_node/{$}", levelRoot, s.clusterOn(s.updateClusterNode))
	s.handle(mux, "DELETE /api/cluster_node/{id}", levelRoot, s.clusterOn(s.deleteClusterNode))
	s.handle(mux, "POST /api/cluster_node/{id}/enable", levelRoot, s.clusterOn(s.enableClusterNode))
	s.handle(mux, "POST /api/cluster_node/join_token", levelRoot, s.clusterOn(s.createJoinToken))
	s.handle(mux, "POST /api/cluster_node/{id}/release_grants", levelRoot, s.clusterOn(s.releaseNodeGrants))
	s.handle(mux, "POST /api/cluster_node/{id}/join", levelRoot, sameOriginOnly(s.clusterOn(s.joinCluster)))
	s.handle(mux, "POST /api/cluster_node/{id}/resync", levelRoot, sameOriginOnly(s.clusterOn(s.resyncCluster)))

	s.handle(mux, "/api/", levelGuest, notFound)
}
