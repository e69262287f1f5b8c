// Every page of the console, in navigation order. role is the least role
// that sees it (1 user, 10 admin, 100 root: docs/api.md Roles); group
// places it in the navigation, section in an administration section.
// Adding a page = one line here, one module under pages/, its labels in
// i18n.js (docs/console.md).
import { Dashboard } from './pages/dashboard.js';
import { Keys } from './pages/keys.js';
import { Redeem } from './pages/redeem.js';
import { Profile } from './pages/profile.js';
import { Overview } from './pages/overview.js';
import { Login, Register } from './pages/login.js';
import { GitHubCallback, OIDCCallback, ResetPassword } from './pages/accounts.js';
// User pages: logs, subscriptions, plans, top-up, orders.
import { Logs } from './pages/logs.js';
import { Subscriptions } from './pages/subscriptions.js';
import { Plans } from './pages/plans.js';
import { Topup } from './pages/topup.js';
import { Orders } from './pages/orders.js';
// Administration pages (issue 12, admin part).
import { Users } from './pages/users.js';
import { Channels } from './pages/channels.js';
import { Prices } from './pages/prices.js';
import { Redemptions } from './pages/redemptions.js';
import { Nodes } from './pages/nodes.js';
// Administration pages: commerce (plans, orders, subscriptions, diagnostics).
import { AdminPlans } from './pages/adminplans.js';
import { AdminOrders } from './pages/adminorders.js';
import { AdminSubs } from './pages/adminsubs.js';
import { AdminDiag } from './pages/admindiag.js';
// Settings pages (issue 12: top-up and payment settings, runtime options).
import { Settings } from './pages/settings.js';
import { Options } from './pages/options.js';
// Every user's logs (admin).
import { AdminLogs } from './pages/adminlogs.js';
// The audit trail of admin actions (root, issue 30 §4).
import { Audit } from './pages/audit.js';

export const ROLE_USER = 1;
export const ROLE_ADMIN = 10;
export const ROLE_ROOT = 100;

export const routes = [
  { path: '/dashboard', label: 'nav.dashboard', role: ROLE_USER, group: 'user', page: Dashboard },
  { path: '/keys', label: 'nav.keys', role: ROLE_USER, group: 'user', page: Keys },
  { path: '/redeem', label: 'nav.redeem', role: ROLE_USER, group: 'user', page: Redeem },
  { path: '/profile', label: 'nav.profile', role: ROLE_USER, group: 'user', page: Profile },
  { path: '/admin', label: 'nav.overview', role: ROLE_ADMIN, group: 'admin', section: 'watch', page: Overview },
  // User pages: logs, subscriptions, plans, top-up, orders.
  { path: '/logs', label: 'nav.logs', role: ROLE_USER, group: 'user', page: Logs },
  { path: '/subscriptions', label: 'nav.subscriptions', role: ROLE_USER, group: 'user', page: Subscriptions },
  { path: '/plans', label: 'nav.plans', role: ROLE_USER, group: 'user', page: Plans },
  { path: '/topup', label: 'nav.topup', role: ROLE_USER, group: 'user', page: Topup },
  { path: '/orders', label: 'nav.orders', role: ROLE_USER, group: 'user', page: Orders },
  // Administration pages (issue 12, admin part); least roles per docs/api.md.
  { path: '/admin/users', label: 'nav.users', role: ROLE_ADMIN, group: 'admin', section: 'people', page: Users },
  { path: '/admin/channels', label: 'nav.channels', role: ROLE_ADMIN, group: 'admin', section: 'supply', page: Channels },
  { path: '/admin/prices', label: 'nav.prices', role: ROLE_ROOT, group: 'admin', section: 'supply', page: Prices },
  { path: '/admin/redemptions', label: 'nav.redemptions', role: ROLE_ADMIN, group: 'admin', section: 'people', page: Redemptions },
  { path: '/admin/nodes', label: 'nav.nodes', role: ROLE_ROOT, group: 'admin', section: 'system', page: Nodes },
  // Administration pages: commerce. Plans are read by admins, written by root (the page hides writes).
  { path: '/admin/plans', label: 'nav.adminPlans', role: ROLE_ADMIN, group: 'admin', section: 'supply', page: AdminPlans },
  { path: '/admin/orders', label: 'nav.adminOrders', role: ROLE_ADMIN, group: 'admin', section: 'people', page: AdminOrders },
  { path: '/admin/subscriptions', label: 'nav.adminSubs', role: ROLE_ADMIN, group: 'admin', section: 'people', page: AdminSubs },
  { path: '/admin/diag', label: 'nav.adminDiag', role: ROLE_ADMIN, group: 'admin', section: 'system', page: AdminDiag },
  // Settings pages (issue 12): root only (docs/api.md).
  { path: '/admin/settings', label: 'nav.settings', role: ROLE_ROOT, group: 'admin', section: 'system', page: Settings },
  { path: '/admin/options', label: 'nav.options', role: ROLE_ROOT, group: 'admin', section: 'system', page: Options },
  { path: '/admin/logs', label: 'nav.adminLogs', role: ROLE_ADMIN, group: 'admin', section: 'watch', page: AdminLogs },
  { path: '/admin/audit', label: 'nav.audit', role: ROLE_ROOT, group: 'admin', section: 'watch', page: Audit },
];

// guestRoutes are shown only when logged out, except those marked any:
// the provider callbacks, which a logged-in user reaches when binding a
// provider from the profile page.
export const guestRoutes = [
  { path: '/login', label: 'login.title', page: Login },
  { path: '/register', label: 'register.title', page: Register },
  // Account pages reached by links (issue 31): provider callbacks, the mailed reset link.
  { path: '/oauth/oidc', label: 'login.title', page: OIDCCallback, any: true },
  { path: '/oauth/github', label: 'login.title', page: GitHubCallback, any: true },
  { path: '/user/reset', label: 'reset.title', page: ResetPassword },
];

// adminSections fold the administration pages into collapsible groups
// (issue 30 §3: root's 22 links were three rows); a route without a
// section goes under "system".
export const adminSections = [
  { id: 'watch', label: 'nav.sectionWatch' },
  { id: 'people', label: 'nav.sectionPeople' },
  { id: 'supply', label: 'nav.sectionSupply' },
  { id: 'system', label: 'nav.sectionSystem' },
];

export const navGroups = [
  { id: 'user', label: 'nav.groupUser' },
  { id: 'admin', label: 'nav.groupAdmin' },
];
