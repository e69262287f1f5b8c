// Labels in Chinese and English. Every label the console shows is a key
// here, in both languages (the browser test checks none is missing).
// Messages from the API are shown as the server sent them, not
// translated here. The language defaults to the browser's and is kept in
// localStorage.
const KEY = 'modelgate.lang';

export const languages = [{ id: 'zh', name: '中文' }, { id: 'en', name: 'English' }];

const dict = {
  en: {
    'nav.skip': 'Skip to content', 'nav.groupUser': 'Account', 'nav.groupAdmin': 'Administration',
    'nav.dashboard': 'Dashboard', 'nav.keys': 'API keys', 'nav.redeem': 'Redeem a code', 'nav.profile': 'Profile',
    'nav.overview': 'Overview', 'nav.logout': 'Log out',
    'ui.language': 'Language', 'ui.theme': 'Theme', 'ui.loading': 'Loading…', 'ui.notFound': 'Page not found',
    'ui.forbidden': 'Your role cannot open this page.',
    'theme.system': 'System theme', 'theme.light': 'Light theme', 'theme.dark': 'Dark theme',
    'action.save': 'Save', 'action.cancel': 'Cancel', 'action.close': 'Close', 'action.edit': 'Edit',
    'action.delete': 'Delete', 'action.enable': 'Enable', 'action.disable': 'Disable',
    'copy.button': 'Copy', 'copy.done': 'Copied', 'copy.failed': 'Copy failed: select and copy by hand',
    'pager.label': 'Pages', 'pager.prev': 'Previous', 'pager.next': 'Next', 'pager.status': 'Page {page} of {pages} ({total} in all)',
    'list.empty': 'Nothing here yet.',
    'field.username': 'Username', 'field.password': 'Password', 'field.passwordConfirm': 'Repeat the password',
    'field.passwordMismatch': 'The two passwords differ.', 'field.emailOptional': 'Email (optional)',
    'login.title': 'Log in', 'login.submit': 'Log in', 'login.noAccount': 'No account yet?',
    'register.title': 'Register', 'register.submit': 'Create account', 'register.haveAccount': 'Already registered? Log in',
    'register.sendCode': 'Send code', 'register.code': 'Verification code', 'register.codeSent': 'A code was sent to your email.',
    'register.providersOnly': 'Registration is open through these providers:', 'field.email': 'Email',
    'login.oidc': 'Log in with OpenID Connect', 'login.github': 'Log in with GitHub', 'login.signingIn': 'Signing in…',
    'reset.title': 'Reset password', 'reset.submit': 'Set a new password', 'reset.done': 'Your new password (shown once):',
    'register.closed': 'Registration is closed.', 'register.done': 'Your account is ready: log in now.',
    'dash.balance': 'Balance', 'dash.used': 'Used in all', 'dash.requests7d': 'Requests, last 7 days',
    'dash.tokens7d': 'Tokens, last 7 days', 'dash.last7days': 'Usage per day (UTC), last 7 days',
    'dash.day': 'Day', 'dash.requests': 'Requests', 'dash.tokens': 'Tokens', 'dash.cost': 'Cost',
    'keys.create': 'Create a key', 'keys.edit': 'Edit the key', 'keys.name': 'Name', 'keys.key': 'Key',
    'keys.status': 'Status', 'keys.quota': 'Quota left', 'keys.used': 'Used', 'keys.expires': 'Expires',
    'keys.actions': 'Actions', 'keys.never': 'Never', 'keys.unlimitedShort': 'Unlimited',
    'keys.models': 'Allowed models', 'keys.modelsHint': 'Comma-separated; empty allows every model.',
    'keys.subnet': 'Allowed networks', 'keys.subnetHint': 'Comma-separated CIDRs such as 10.0.0.0/8; empty allows any address.',
    'keys.expiresHint': 'Empty: never expires.', 'keys.unlimited': 'No quota limit', 'keys.limit': 'Quota limit (CNY)',
    'keys.createdOnce': 'Your new key. It is shown only this once: copy it now.',
    'keys.confirmDelete': 'Delete the key "{name}" for good?',
    'keys.status1': 'Enabled', 'keys.status2': 'Disabled', 'keys.status3': 'Expired', 'keys.status4': 'Used up',
    'redeem.code': 'Redemption code', 'redeem.submit': 'Redeem', 'redeem.done': '{amount} added to your balance.',
    'profile.displayName': 'Display name', 'profile.newPassword': 'New password',
    'profile.passwordHint': 'Leave empty to keep it. A new password logs out your other sessions.',
    'profile.saved': 'Saved.', 'profile.accessToken': 'Access token',
    'profile.accessTokenHint': 'For scripts calling /api in your name. A new token replaces the old one at once.',
    'profile.newToken': 'Generate a new token',
    'overview.range': 'Range', 'overview.users': 'Users', 'overview.active7d': 'Active users, 7 days',
    'overview.keys': 'API keys', 'overview.channels': 'Channels', 'overview.plans': 'Plans',
    'overview.quotaToday': 'Consumed today', 'overview.quotaMonth': 'Consumed, 30 days',
    'overview.revenue': 'Revenue in range', 'overview.refund': 'Refunds in range',
    'overview.enabledOfTotal': 'Counts read enabled / total.',
    'range.today': 'Today', 'range.7d': 'Last 7 days', 'range.30d': 'Last 30 days', 'range.all': 'All time',
    // User pages: logs, subscriptions, plans, top-up, orders.
    'nav.logs': 'Logs', 'nav.subscriptions': 'Subscriptions', 'nav.plans': 'Plans', 'nav.topup': 'Top up', 'nav.orders': 'Orders',
    // Logs
    'logs.type': 'Type', 'logs.type0': 'All', 'logs.type1': 'Top-up', 'logs.type2': 'Usage', 'logs.type3': 'Admin',
    'logs.type4': 'System', 'logs.type5': 'Error', 'logs.model': 'Model', 'logs.key': 'Key name',
    'logs.from': 'From', 'logs.to': 'To', 'logs.apply': 'Filter', 'logs.reset': 'Clear filters', 'logs.time': 'Time',
    'logs.tokens': 'Tokens (in / out)', 'logs.cost': 'Cost', 'logs.elapsed': 'Time taken', 'logs.content': 'Details',
    'logs.bySub': 'subscription',
    // Subscriptions
    'subs.none': 'You have no active subscription.', 'subs.buy': 'See the plans',
    'subs.planGone': 'Plan no longer offered', 'subs.status1': 'Active', 'subs.status2': 'Expired', 'subs.status3': 'Cancelled',
    'subs.period': 'From {start} to {end}', 'subs.lifetimeUse': 'Used in all: {requests} requests, {tokens} tokens',
    'subs.noLimits': 'This plan sets no limits per model.', 'subs.unlisted': '(no longer in the plan)',
    'subs.unlimited': 'No limit', 'subs.limit': 'Limit', 'subs.used': 'Used', 'subs.remaining': 'Left', 'subs.frees': 'Frees up at',
    'subs.usedOf': '{used} of {limit} used', 'subs.neverFrees': 'Never (lifetime allowance)', 'subs.nothingUsed': 'Nothing used in the window',
    'subs.lifetime': 'lifetime', 'subs.windowHours': 'per {n} h', 'subs.windowDays': 'per {n} days', 'subs.refresh': 'Refresh usage',
    'subs.limit.request_period': 'Requests', 'subs.limit.request_week': 'Requests a week', 'subs.limit.request_month': 'Requests a month',
    'subs.limit.token_period': 'Tokens', 'subs.limit.token_week': 'Tokens a week', 'subs.limit.token_month': 'Tokens a month',
    'subs.limit.tokens': 'Token allowance',
    // Plans
    'plans.none': 'No plan is offered yet.', 'plans.recommended': 'Recommended', 'plans.days': '{n} days',
    'plans.models': 'Models:', 'plans.buy': 'Buy', 'plans.buyTitle': 'Buy "{name}"', 'plans.mode': 'How to buy',
    'plans.mode.stack': 'Add on top (a new subscription, full price)',
    'plans.mode.price_diff': 'Upgrade (pay the difference; your earliest-ending subscription ends)',
    'plans.modeHint': 'The amount to pay is shown before you pay.', 'plans.createOrder': 'Create the order',
    'plans.amount': 'Amount', 'plans.prorated': 'prorated from {price}: the unused part of your current subscription is deducted',
    'plans.orderNo': 'Order', 'plans.seeOrders': 'My orders',
    // Payment
    'pay.method': 'Payment method', 'pay.mobile_a': 'WeChat Pay', 'pay.mobile_b': 'Alipay', 'pay.bank': 'Bank transfer',
    'pay.offline': 'Offline', 'pay.free': 'Free', 'pay.noChannel': 'No payment method is available.', 'pay.payNow': 'Pay',
    'pay.warning': 'The payment could not be started:', 'pay.ready': 'Ready to pay.', 'pay.qrLabel': 'Payment QR code',
    'pay.scan': 'Scan with the app to pay.', 'pay.openLink': 'Open the payment link', 'pay.bankTitle': 'Bank transfer instructions',
    'pay.expires': 'Payable until {time}.',
    // Top-up
    'topup.closed': 'Top-up is not open.', 'topup.amount': 'Amount', 'topup.preset': '{amount}, credits {quota}',
    'topup.custom': 'Another amount', 'topup.customAmount': 'Amount (CNY)', 'topup.credits': 'Credits {quota}.',
    'topup.submit': 'Create the order and pay', 'topup.ordered': 'Order for {amount} created; it credits {quota} once paid.',
    // Orders
    'orders.type': 'Type', 'orders.typeAll': 'All', 'orders.type1': 'Plan', 'orders.type2': 'Top-up', 'orders.what': 'Item',
    'orders.status': 'Status', 'orders.created': 'Created', 'orders.payAgain': 'Pay', 'orders.cancel': 'Cancel the order',
    'orders.payTitle': 'Pay order {no} ({amount})',
    'order.status0': 'Pending', 'order.status1': 'Paid', 'order.status2': 'Cancelled', 'order.status3': 'Refunded',
    // Administration pages (issue 12, admin part): shared.
    'admin.search': 'Search', 'admin.searchButton': 'Search',
    // Users page.
    'nav.users': 'Users', 'users.role': 'Role', 'users.group': 'Group',
    'users.role1': 'User', 'users.role10': 'Admin', 'users.role100': 'Root',
    'users.status1': 'Enabled', 'users.status2': 'Disabled', 'users.status3': 'Deleted',
    'users.promote': 'Make admin', 'users.demote': 'Make user', 'users.topup': 'Top up',
    'users.topupFor': 'Top up {user}', 'users.amount': 'Amount (CNY)',
    'users.amountHint': 'A negative amount deducts from the balance.', 'users.amountInvalid': 'Enter a non-zero amount.',
    'users.remark': 'Remark (optional, kept in the log)', 'users.topupDone': '{amount} credited to {user}.',
    // Channels page.
    'nav.channels': 'Channels', 'channels.create': 'Create a channel', 'channels.edit': 'Edit the channel',
    'channels.type': 'Type', 'channels.type1': 'OpenAI-compatible', 'channels.type14': 'Anthropic', 'channels.type24': 'Gemini',
    'channels.status1': 'Enabled', 'channels.status2': 'Disabled', 'channels.status3': 'Disabled by the system',
    'channels.models': 'Models', 'channels.modelsHint': 'Comma-separated model names this channel serves.',
    'channels.group': 'Groups', 'channels.groupHint': 'Comma-separated; empty means default.',
    'channels.baseURL': 'Base URL', 'channels.baseURLHint': "Empty: the type's official address.",
    'channels.key': 'Upstream key', 'channels.keyHint': 'Optional for keyless local upstreams.',
    'channels.keyKeep': 'Leave empty to keep the stored key (it is never shown).',
    'channels.mapping': 'Model mapping (JSON)', 'channels.mappingHint': 'Requested model → upstream model, e.g. {"gpt-4o": "gpt-4o-2024-08-06"}; empty for none.',
    'channels.priority': 'Priority', 'channels.priorityHint': 'Higher tiers are tried first.', 'channels.weight': 'Weight',
    'channels.tested': 'Last test', 'channels.test': 'Test', 'channels.testing': 'Testing…',
    'channels.testOK': 'OK: {ms} ms ({model})', 'channels.lastError': 'Last error',
    'channels.autoDisabledWhy': 'Why the system disabled it', 'channels.confirmDelete': 'Delete the channel "{name}" for good?',
    // Prices page.
    'nav.prices': 'Prices', 'prices.models': 'Model prices', 'prices.groups': 'Group discounts',
    'prices.createModel': 'Add a model price', 'prices.editModel': 'Edit the model price',
    'prices.createGroup': 'Add a group discount', 'prices.editGroup': 'Edit the group discount',
    'prices.model': 'Model', 'prices.billing': 'Billing', 'prices.billing_token': 'Per token', 'prices.billing_per_request': 'Per request',
    'prices.input': 'Input (CNY / 1M tokens)', 'prices.output': 'Output (CNY / 1M tokens)', 'prices.cached': 'Cached input (CNY / 1M tokens)',
    'prices.cachedHint': '0: cached tokens count at the input price.', 'prices.perRequest': 'Per request (CNY)',
    'prices.unitHint': 'A model without an enabled price cannot be called.',
    'prices.discount': 'Multiplier', 'prices.discountHint': '1 is the full price, 0.8 is 20 % off.',
    'prices.groupModelHint': "Empty: the group's default for every model.", 'prices.allModels': 'every model',
    'prices.confirmDelete': 'Delete the price of "{name}"?',
    // Redemption codes page.
    'nav.redemptions': 'Redemption codes', 'redemptions.create': 'Create codes', 'redemptions.submit': 'Create',
    'redemptions.amount': 'Amount (CNY)', 'redemptions.count': 'How many (1–100)',
    'redemptions.created': '{n} codes of {amount} CNY each created.', 'redemptions.csv': 'Download CSV',
    'redemptions.csvPage': 'This page as CSV', 'redemptions.createdAt': 'Created', 'redemptions.redeemedAt': 'Redeemed',
    'redemptions.status1': 'Unused', 'redemptions.status2': 'Disabled', 'redemptions.status3': 'Used',
    'redemptions.confirmDelete': 'Delete the code "{name}" for good?',
    // Cluster nodes page.
    'nav.nodes': 'Cluster nodes', 'nodes.add': 'Add a node', 'nodes.nodeID': 'Node ID', 'nodes.address': 'Address',
    'nodes.secret': "The node's cluster secret", 'nodes.heartbeat': 'Last heartbeat', 'nodes.failures': 'Failed pings',
    'nodes.never': 'Never', 'nodes.status1': 'Alive', 'nodes.status2': 'Failed', 'nodes.ping': 'Ping',
    'nodes.awaitingSecret': 'Awaiting its secret',
    'nodes.pingOK': 'Answered in {ms} ms; {learned} nodes learned.', 'nodes.pingFailed': 'No answer: {error}',
    // Administration pages: commerce (plans, orders, subscriptions, diagnostics).
    'nav.adminPlans': 'Manage plans', 'nav.adminOrders': 'All orders', 'nav.adminSubs': 'All subscriptions', 'nav.adminDiag': 'Subscription check',
    // Admin plans page.
    'aplans.create': 'Create a plan', 'aplans.edit': 'Edit the plan', 'aplans.confirmDelete': 'Delete the plan "{name}" for good?',
    'aplans.duration': 'Duration', 'aplans.models': 'Models', 'aplans.defaultModel': 'Default model', 'aplans.noDefault': 'None',
    'aplans.status1': 'Listed', 'aplans.status0': 'Unlisted', 'aplans.price': 'Price (CNY)', 'aplans.durationDays': 'Duration (days, 1–3650)',
    'aplans.durationText': 'Duration as shown (optional)', 'aplans.tokens': 'Total token allowance',
    'aplans.tokensHint': '0: no allowance over all models.', 'aplans.modelLimits': 'Limits per model',
    'aplans.limitsHint': 'One row per model. An empty or 0 cell sets no limit; the period is 1–720 hours (default 5).',
    'aplans.periodH': 'Period (hours)', 'aplans.rowModel': 'Model of row {n}', 'aplans.rowField': '{field}, row {n}',
    'aplans.addRow': 'Add a model', 'aplans.removeRow': 'Remove row {n}', 'aplans.description': 'Description',
    'aplans.features': 'Features', 'aplans.featuresHint': 'One per line, at most 50.', 'aplans.sort': 'Sort order (ascending)',
    // Admin orders page.
    'aorders.filters': 'Filter the orders', 'aorders.userID': 'User ID', 'aorders.keyword': 'Order number or username',
    'aorders.tradeNo': 'Trade number', 'aorders.tradeNoHint': "The payment's reference, e.g. from the bank statement (optional).",
    'aorders.paidAt': 'Paid', 'aorders.markPaid': 'Mark paid', 'aorders.markPaidTitle': 'Mark order {no} ({amount}) paid',
    'aorders.refund': 'Refund', 'aorders.confirmRefund': 'Mark order {no} refunded? The credit or subscription it gave stays.',
    'aorders.confirmDelete': 'Delete order {no} for good? What it activated stays.',
    // Admin subscriptions page.
    'asubs.create': 'Grant a subscription', 'asubs.grant': 'Grant', 'asubs.edit': 'Edit subscription {id} ({user})',
    'asubs.plan': 'Plan', 'asubs.start': 'Start', 'asubs.end': 'End', 'asubs.billing': 'Billing type',
    'asubs.billing_token': 'Tokens', 'asubs.billing_request': 'Requests', 'asubs.order': 'Order ID', 'asubs.notes': 'Notes',
    'asubs.days': 'Days', 'asubs.daysHint': "0: the plan's duration.", 'asubs.cancel': 'Cancel it',
    'asubs.confirmCancel': 'Cancel subscription {id} of {user}?', 'asubs.confirmDelete': 'Delete subscription {id} of {user} for good?',
    // Subscription diagnostics page.
    'diag.refresh': 'Check again', 'diag.summary': '{n} subscriptions checked (the first 100 by ID); {missing} without a plan ID.',
    'diag.planID': 'Plan ID', 'diag.storedStatus': 'Status as stored', 'diag.orderPlan': "Order's plan ID",
    'diag.noUser': 'no user {id}', 'diag.noOrder': 'order {id} missing', 'diag.granted': 'granted by an admin',
    // Settings pages (issue 12): top-up and payment settings, runtime options, top users.
    'nav.settings': 'Top-up and payment', 'settings.topup': 'Top-up settings', 'settings.topupEnabled': 'Top-up open',
    'settings.allowCustom': 'Custom amounts allowed', 'settings.exchangeRate': 'Exchange rate (quota per CNY)',
    'settings.exchangeRateHint': '1000000 credits 1 CNY of balance per CNY paid.', 'settings.presets': 'Preset amounts',
    'settings.presetAmount': 'Preset {n}: amount (CNY)', 'settings.presetBonus': 'Preset {n}: bonus quota',
    'settings.presetRemove': 'Remove preset {n}', 'settings.presetAdd': 'Add a preset', 'settings.saved': 'Saved.',
    'settings.presetCredit': 'credits ¥{credit} for ¥{price}', 'settings.presetFill': 'Preset {n}: credit the price',
    'settings.warnPresetZero': 'Preset {n} sells for ¥{price} and credits nothing.',
    'settings.warnPresetBelow': 'Preset {n} sells for ¥{price} but credits only ¥{credit}.',
    'settings.warnRateOne': 'The exchange rate is 1: each CNY paid credits 1 quota (¥0.000001). 1 CNY of balance is 1000000 quota.',
    'settings.payment': 'Payment channels', 'settings.channelEnabled': 'Channel enabled',
    'settings.secretHint': 'Shown as ****** once set; leave it so to keep the stored secret.',
    'settings.pemHint': 'PEM or bare base64; shown as ****** once set (leave it so to keep it).',
    'settings.pemFile': 'Load {field} from a file', 'settings.noFile': 'none',
    'settings.f_app_id': 'App ID', 'settings.f_mch_id': 'Merchant ID', 'settings.f_api_key': 'API v2 key',
    'settings.f_notify_url': 'Notify URL', 'settings.f_gateway': 'Gateway', 'settings.f_cert_file': 'Certificate file',
    'settings.f_key_file': 'Key file', 'settings.f_private_key': 'App private key', 'settings.f_public_key': 'Alipay public key',
    'settings.f_private_key_file': 'Private key file', 'settings.f_public_key_file': 'Public key file',
    'settings.f_account_name': 'Account name', 'settings.f_account_no': 'Account number', 'settings.f_bank_name': 'Bank',
    'settings.f_branch': 'Branch', 'settings.f_notes': 'Notes for the payer',
    // Key rate limits (issue 13 §1).
    'keys.rpmLimit': 'Requests per minute', 'keys.tpmLimit': 'Tokens per minute', 'keys.concurrencyLimit': 'Concurrent requests',
    'keys.rateLimitHint': '0 = no limit on the key; your group\'s limits still apply.',
    'nav.options': 'Runtime options', 'options.key': 'Option', 'options.value': 'Value',
    'options.editKey': 'Edit {key}', 'options.saved': '{key} saved.',
    'topUsers.title': 'Top users in range', 'topUsers.rank': 'Rank', 'topUsers.quota': 'Consumed', 'topUsers.plan': 'Current plan',
    // Charts, model price cache and tier fields, certificate uploads (issue 12).
    'usage.metric': 'Chart', 'usage.quota': 'Cost', 'usage.requests': 'Requests', 'usage.tokens': 'Tokens',
    'usage.perDay': '{metric} per day (UTC)', 'usage.perModel': '{metric} per model', 'usage.model': 'Model',
    'usage.others': 'Other models', 'usage.byDay': 'Per day (UTC)', 'usage.byModel': 'Per model',
    'usage.summaryDays': '{metric} per day from {from} to {to}: {total} in all, the most on {peak} ({peakValue}). The tables below list every figure.',
    'usage.summaryModels': '{metric} of {n} models: the most for {top} ({topValue}). The tables below list every figure.',
    'usage.summaryEmpty': 'No {metric} in this period.',
    'overview.usage': 'Usage of every user: {range} (UTC)',
    'prices.cacheWrite': 'Cache write, 5 min (CNY / 1M tokens)', 'prices.cacheWrite1h': 'Cache write, 1 hour (CNY / 1M tokens)',
    'prices.cacheWriteHint': '0: written tokens count at the input price.',
    'prices.tiers': 'Context-length tiers', 'prices.tierAbove': 'Prompt above (tokens)', 'prices.noTiers': 'No tiers: the prices above apply to every prompt.',
    'prices.tiersHint': 'A call whose whole prompt is above a tier\'s size is billed, every part of it, at the last such tier\'s prices; sizes ascend, at most 8 tiers; a cache price of 0 is the tier\'s input price.',
    'prices.tierAdd': 'Add a tier',
    'settings.uploadFile': '{field}: upload a PEM file', 'settings.storedFile': 'Stored file',
    'nav.audit': 'Audit trail', 'audit.action': 'Action', 'audit.target': 'Target', 'audit.ip': 'Address',
    'audit.detail': 'Detail', 'audit.show': 'Show',
    'audit.hint': 'Every successful admin change on this node: who, from where, what, and the target before and after. Keys, passwords and secrets are masked.',
    'nav.adminLogs': 'All logs', 'alogs.username': 'Username', 'alogs.channel': 'Channel ID', 'alogs.status': 'HTTP status',
    'alogs.errorCode': 'Error code', 'alogs.keyword': 'Keyword', 'alogs.upstream': 'Upstream said',
    'alogs.keywordHint': 'Part of a username, model, key name, details or request ID (slower on many logs).',
    'alogs.stat': 'Usage logs matching: {requests} requests, {quota}, tokens {prompt} in / {completion} out.',
    // Channel circuit breakers (channels page).
    'breakers.tripped': 'Breaker open for {n} model(s)', 'breakers.errors': 'Recent upstream failures',
    'breakers.perNode': 'Breakers are kept per node: this is the node that answered.',
    'breakers.state_closed': 'Closed', 'breakers.state_open': 'Open', 'breakers.state_half_open': 'Probing',
    'breakers.probeAt': 'probe at the first call after {time}', 'breakers.window': '{failures} of {calls} calls failed in the window',
    'breakers.noAnswer': 'no answer', 'breakers.probe': 'probe',
  },
  zh: {
    'nav.skip': '跳到正文', 'nav.groupUser': '我的账户', 'nav.groupAdmin': '系统管理',
    'nav.dashboard': '仪表盘', 'nav.keys': 'API 令牌', 'nav.redeem': '兑换码', 'nav.profile': '个人设置',
    'nav.overview': '总览', 'nav.logout': '退出登录',
    'ui.language': '语言', 'ui.theme': '主题', 'ui.loading': '加载中…', 'ui.notFound': '页面不存在',
    'ui.forbidden': '您的角色无权打开此页面。',
    'theme.system': '跟随系统', 'theme.light': '浅色主题', 'theme.dark': '深色主题',
    'action.save': '保存', 'action.cancel': '取消', 'action.close': '关闭', 'action.edit': '编辑',
    'action.delete': '删除', 'action.enable': '启用', 'action.disable': '禁用',
    'copy.button': '复制', 'copy.done': '已复制', 'copy.failed': '复制失败,请手动选择并复制',
    'pager.label': '分页', 'pager.prev': '上一页', 'pager.next': '下一页', 'pager.status': '第 {page} / {pages} 页(共 {total} 条)',
    'list.empty': '暂无数据。',
    'field.username': '用户名', 'field.password': '密码', 'field.passwordConfirm': '再次输入密码',
    'field.passwordMismatch': '两次输入的密码不一致。', 'field.emailOptional': '邮箱(可选)',
    'login.title': '登录', 'login.submit': '登录', 'login.noAccount': '还没有账户?',
    'register.title': '注册', 'register.submit': '创建账户', 'register.haveAccount': '已有账户?去登录',
    'register.sendCode': '发送验证码', 'register.code': '验证码', 'register.codeSent': '验证码已发送到您的邮箱。',
    'register.providersOnly': '请通过以下方式注册:', 'field.email': '邮箱',
    'login.oidc': '使用 OpenID Connect 登录', 'login.github': '使用 GitHub 登录', 'login.signingIn': '正在登录…',
    'reset.title': '重置密码', 'reset.submit': '设置新密码', 'reset.done': '您的新密码(仅显示一次):',
    'register.closed': '管理员关闭了新用户注册。', 'register.done': '账户已创建,请登录。',
    'dash.balance': '余额', 'dash.used': '累计消费', 'dash.requests7d': '近 7 天请求数',
    'dash.tokens7d': '近 7 天 Token 数', 'dash.last7days': '近 7 天每日用量(UTC)',
    'dash.day': '日期', 'dash.requests': '请求数', 'dash.tokens': 'Token 数', 'dash.cost': '费用',
    'keys.create': '创建令牌', 'keys.edit': '编辑令牌', 'keys.name': '名称', 'keys.key': '令牌',
    'keys.status': '状态', 'keys.quota': '剩余额度', 'keys.used': '已用', 'keys.expires': '过期时间',
    'keys.actions': '操作', 'keys.never': '永不过期', 'keys.unlimitedShort': '无限额度',
    'keys.models': '允许的模型', 'keys.modelsHint': '用逗号分隔;留空表示允许所有模型。',
    'keys.subnet': '允许的网段', 'keys.subnetHint': '用逗号分隔的 CIDR,如 10.0.0.0/8;留空表示不限地址。',
    'keys.expiresHint': '留空表示永不过期。', 'keys.unlimited': '不限额度', 'keys.limit': '额度上限(元)',
    'keys.createdOnce': '这是您的新令牌,只显示这一次,请立即复制。',
    'keys.confirmDelete': '确定永久删除令牌“{name}”?',
    'keys.status1': '已启用', 'keys.status2': '已禁用', 'keys.status3': '已过期', 'keys.status4': '已耗尽',
    'redeem.code': '兑换码', 'redeem.submit': '兑换', 'redeem.done': '已向余额充入 {amount}。',
    'profile.displayName': '显示名称', 'profile.newPassword': '新密码',
    'profile.passwordHint': '留空则不修改。修改密码会退出您的其他会话。',
    'profile.saved': '已保存。', 'profile.accessToken': '访问令牌',
    'profile.accessTokenHint': '供脚本以您的身份调用 /api。生成新令牌会立即替换旧令牌。',
    'profile.newToken': '生成新的访问令牌',
    'overview.range': '时间范围', 'overview.users': '用户', 'overview.active7d': '7 天活跃用户',
    'overview.keys': 'API 令牌', 'overview.channels': '渠道', 'overview.plans': '套餐',
    'overview.quotaToday': '今日消耗', 'overview.quotaMonth': '30 天消耗',
    'overview.revenue': '范围内收入', 'overview.refund': '范围内退款',
    'overview.enabledOfTotal': '数字为:启用 / 总数。',
    'range.today': '今天', 'range.7d': '近 7 天', 'range.30d': '近 30 天', 'range.all': '全部',
    // User pages: logs, subscriptions, plans, top-up, orders.
    'nav.logs': '使用日志', 'nav.subscriptions': '我的订阅', 'nav.plans': '套餐', 'nav.topup': '充值', 'nav.orders': '我的订单',
    // Logs
    'logs.type': '类型', 'logs.type0': '全部', 'logs.type1': '充值', 'logs.type2': '消费', 'logs.type3': '管理',
    'logs.type4': '系统', 'logs.type5': '错误', 'logs.model': '模型', 'logs.key': '令牌名称',
    'logs.from': '开始时间', 'logs.to': '结束时间', 'logs.apply': '筛选', 'logs.reset': '清除筛选', 'logs.time': '时间',
    'logs.tokens': 'Token(输入 / 输出)', 'logs.cost': '费用', 'logs.elapsed': '耗时', 'logs.content': '详情',
    'logs.bySub': '订阅',
    // Subscriptions
    'subs.none': '您没有生效中的订阅。', 'subs.buy': '查看套餐',
    'subs.planGone': '套餐已不再提供', 'subs.status1': '生效中', 'subs.status2': '已过期', 'subs.status3': '已取消',
    'subs.period': '{start} 至 {end}', 'subs.lifetimeUse': '累计使用:{requests} 次请求,{tokens} 个 Token',
    'subs.noLimits': '此套餐未设置按模型的限额。', 'subs.unlisted': '(已不在套餐中)',
    'subs.unlimited': '不限', 'subs.limit': '限额', 'subs.used': '已用', 'subs.remaining': '剩余', 'subs.frees': '恢复时间',
    'subs.usedOf': '已用 {used} / {limit}', 'subs.neverFrees': '不恢复(总量额度)', 'subs.nothingUsed': '窗口内尚无使用',
    'subs.lifetime': '总量', 'subs.windowHours': '每 {n} 小时', 'subs.windowDays': '每 {n} 天', 'subs.refresh': '刷新用量',
    'subs.limit.request_period': '请求次数', 'subs.limit.request_week': '每周请求次数', 'subs.limit.request_month': '每月请求次数',
    'subs.limit.token_period': 'Token 数', 'subs.limit.token_week': '每周 Token 数', 'subs.limit.token_month': '每月 Token 数',
    'subs.limit.tokens': 'Token 总额度',
    // Plans
    'plans.none': '暂无可购买的套餐。', 'plans.recommended': '推荐', 'plans.days': '{n} 天',
    'plans.models': '模型:', 'plans.buy': '购买', 'plans.buyTitle': '购买“{name}”', 'plans.mode': '购买方式',
    'plans.mode.stack': '叠加(新开一份订阅,全价)',
    'plans.mode.price_diff': '升级(补差价;最早到期的订阅随即结束)',
    'plans.modeHint': '支付前会显示应付金额。', 'plans.createOrder': '创建订单',
    'plans.amount': '金额', 'plans.prorated': '原价 {price},已抵扣当前订阅未使用部分',
    'plans.orderNo': '订单号', 'plans.seeOrders': '我的订单',
    // Payment
    'pay.method': '支付方式', 'pay.mobile_a': '微信支付', 'pay.mobile_b': '支付宝', 'pay.bank': '银行转账',
    'pay.offline': '线下', 'pay.free': '免费', 'pay.noChannel': '暂无可用的支付方式。', 'pay.payNow': '支付',
    'pay.warning': '无法发起支付:', 'pay.ready': '请完成支付。', 'pay.qrLabel': '支付二维码',
    'pay.scan': '请用手机 App 扫码支付。', 'pay.openLink': '打开支付链接', 'pay.bankTitle': '银行转账说明',
    'pay.expires': '请在 {time} 前支付。',
    // Top-up
    'topup.closed': '充值功能未开启。', 'topup.amount': '金额', 'topup.preset': '{amount},到账 {quota}',
    'topup.custom': '其他金额', 'topup.customAmount': '金额(元)', 'topup.credits': '到账 {quota}。',
    'topup.submit': '创建订单并支付', 'topup.ordered': '已创建 {amount} 的订单,支付后到账 {quota}。',
    // Orders
    'orders.type': '类型', 'orders.typeAll': '全部', 'orders.type1': '套餐', 'orders.type2': '充值', 'orders.what': '商品',
    'orders.status': '状态', 'orders.created': '创建时间', 'orders.payAgain': '支付', 'orders.cancel': '取消订单',
    'orders.payTitle': '支付订单 {no}({amount})',
    'order.status0': '待支付', 'order.status1': '已支付', 'order.status2': '已取消', 'order.status3': '已退款',
    // Administration pages (issue 12, admin part): shared.
    'admin.search': '搜索', 'admin.searchButton': '搜索',
    // Users page.
    'nav.users': '用户', 'users.role': '角色', 'users.group': '分组',
    'users.role1': '普通用户', 'users.role10': '管理员', 'users.role100': '超级管理员',
    'users.status1': '已启用', 'users.status2': '已禁用', 'users.status3': '已删除',
    'users.promote': '设为管理员', 'users.demote': '设为普通用户', 'users.topup': '充值',
    'users.topupFor': '为 {user} 充值', 'users.amount': '金额(元)',
    'users.amountHint': '负数表示从余额中扣减。', 'users.amountInvalid': '请输入不为零的金额。',
    'users.remark': '备注(可选,记入日志)', 'users.topupDone': '已为 {user} 充值 {amount}。',
    // Channels page.
    'nav.channels': '渠道', 'channels.create': '创建渠道', 'channels.edit': '编辑渠道',
    'channels.type': '类型', 'channels.type1': 'OpenAI 兼容', 'channels.type14': 'Anthropic', 'channels.type24': 'Gemini',
    'channels.status1': '已启用', 'channels.status2': '已禁用', 'channels.status3': '已被系统禁用',
    'channels.models': '模型', 'channels.modelsHint': '用逗号分隔此渠道提供的模型名称。',
    'channels.group': '分组', 'channels.groupHint': '用逗号分隔;留空表示 default。',
    'channels.baseURL': 'Base URL', 'channels.baseURLHint': '留空使用该类型的官方地址。',
    'channels.key': '上游密钥', 'channels.keyHint': '无需密钥的本地上游可留空。',
    'channels.keyKeep': '留空则保留已保存的密钥(密钥不会显示)。',
    'channels.mapping': '模型映射(JSON)', 'channels.mappingHint': '请求的模型 → 上游模型,如 {"gpt-4o": "gpt-4o-2024-08-06"};留空表示不映射。',
    'channels.priority': '优先级', 'channels.priorityHint': '数值越大越先尝试。', 'channels.weight': '权重',
    'channels.tested': '上次测试', 'channels.test': '测试', 'channels.testing': '测试中…',
    'channels.testOK': '成功:{ms} 毫秒({model})', 'channels.lastError': '最近错误',
    'channels.autoDisabledWhy': '系统禁用原因', 'channels.confirmDelete': '确定永久删除渠道“{name}”?',
    // Prices page.
    'nav.prices': '价格', 'prices.models': '模型价格', 'prices.groups': '分组折扣',
    'prices.createModel': '添加模型价格', 'prices.editModel': '编辑模型价格',
    'prices.createGroup': '添加分组折扣', 'prices.editGroup': '编辑分组折扣',
    'prices.model': '模型', 'prices.billing': '计费方式', 'prices.billing_token': '按 Token', 'prices.billing_per_request': '按次',
    'prices.input': '输入(元 / 百万 Token)', 'prices.output': '输出(元 / 百万 Token)', 'prices.cached': '缓存输入(元 / 百万 Token)',
    'prices.cachedHint': '0 表示缓存 Token 按输入价格计费。', 'prices.perRequest': '每次(元)',
    'prices.unitHint': '没有启用价格的模型无法调用。',
    'prices.discount': '倍率', 'prices.discountHint': '1 为原价,0.8 为八折。',
    'prices.groupModelHint': '留空表示该分组所有模型的默认折扣。', 'prices.allModels': '所有模型',
    'prices.confirmDelete': '确定删除“{name}”的价格?',
    // Redemption codes page.
    'nav.redemptions': '兑换码管理', 'redemptions.create': '生成兑换码', 'redemptions.submit': '生成',
    'redemptions.amount': '金额(元)', 'redemptions.count': '数量(1–100)',
    'redemptions.created': '已生成 {n} 个兑换码,每个 {amount} 元。', 'redemptions.csv': '下载 CSV',
    'redemptions.csvPage': '导出本页为 CSV', 'redemptions.createdAt': '创建时间', 'redemptions.redeemedAt': '兑换时间',
    'redemptions.status1': '未使用', 'redemptions.status2': '已禁用', 'redemptions.status3': '已使用',
    'redemptions.confirmDelete': '确定永久删除兑换码“{name}”?',
    // Cluster nodes page.
    'nav.nodes': '集群节点', 'nodes.add': '添加节点', 'nodes.nodeID': '节点编号', 'nodes.address': '地址',
    'nodes.secret': '该节点的集群密钥', 'nodes.heartbeat': '最近心跳', 'nodes.failures': '连续失败次数',
    'nodes.never': '从未', 'nodes.status1': '在线', 'nodes.status2': '失联', 'nodes.ping': 'Ping',
    'nodes.awaitingSecret': '等待填写密钥',
    'nodes.pingOK': '{ms} 毫秒内应答;获知 {learned} 个节点。', 'nodes.pingFailed': '无应答:{error}',
    // Administration pages: commerce (plans, orders, subscriptions, diagnostics).
    'nav.adminPlans': '套餐管理', 'nav.adminOrders': '订单管理', 'nav.adminSubs': '订阅管理', 'nav.adminDiag': '订阅诊断',
    // Admin plans page.
    'aplans.create': '新建套餐', 'aplans.edit': '编辑套餐', 'aplans.confirmDelete': '确定永久删除套餐“{name}”?',
    'aplans.duration': '有效期', 'aplans.models': '模型', 'aplans.defaultModel': '默认模型', 'aplans.noDefault': '无',
    'aplans.status1': '上架', 'aplans.status0': '下架', 'aplans.price': '价格(元)', 'aplans.durationDays': '有效天数(1–3650)',
    'aplans.durationText': '有效期说明(可选)', 'aplans.tokens': '总 token 额度',
    'aplans.tokensHint': '0:不设所有模型合计的额度。', 'aplans.modelLimits': '按模型限额',
    'aplans.limitsHint': '每个模型一行。留空或 0 表示不限;周期为 1–720 小时(默认 5)。',
    'aplans.periodH': '周期(小时)', 'aplans.rowModel': '第 {n} 行的模型', 'aplans.rowField': '第 {n} 行的{field}',
    'aplans.addRow': '添加模型', 'aplans.removeRow': '删除第 {n} 行', 'aplans.description': '描述',
    'aplans.features': '特性', 'aplans.featuresHint': '每行一项,最多 50 项。', 'aplans.sort': '排序(升序)',
    // Admin orders page.
    'aorders.filters': '筛选订单', 'aorders.userID': '用户 ID', 'aorders.keyword': '订单号或用户名',
    'aorders.tradeNo': '交易号', 'aorders.tradeNoHint': '付款的流水号,如银行流水上的(可选)。',
    'aorders.paidAt': '支付时间', 'aorders.markPaid': '标记已支付', 'aorders.markPaidTitle': '将订单 {no}({amount})标记为已支付',
    'aorders.refund': '退款', 'aorders.confirmRefund': '将订单 {no} 标记为已退款?它已给出的额度或订阅保留。',
    'aorders.confirmDelete': '确定永久删除订单 {no}?它已激活的内容保留。',
    // Admin subscriptions page.
    'asubs.create': '发放订阅', 'asubs.grant': '发放', 'asubs.edit': '编辑订阅 {id}({user})',
    'asubs.plan': '套餐', 'asubs.start': '开始', 'asubs.end': '结束', 'asubs.billing': '计费类型',
    'asubs.billing_token': '按 token', 'asubs.billing_request': '按次', 'asubs.order': '订单 ID', 'asubs.notes': '备注',
    'asubs.days': '天数', 'asubs.daysHint': '0:使用套餐的有效天数。', 'asubs.cancel': '取消订阅',
    'asubs.confirmCancel': '取消 {user} 的订阅 {id}?', 'asubs.confirmDelete': '确定永久删除 {user} 的订阅 {id}?',
    // Subscription diagnostics page.
    'diag.refresh': '重新检查', 'diag.summary': '已检查 {n} 个订阅(按 ID 前 100 个);{missing} 个没有套餐 ID。',
    'diag.planID': '套餐 ID', 'diag.storedStatus': '存储的状态', 'diag.orderPlan': '订单的套餐 ID',
    'diag.noUser': '用户 {id} 不存在', 'diag.noOrder': '订单 {id} 不存在', 'diag.granted': '管理员发放',
    // Settings pages (issue 12): top-up and payment settings, runtime options, top users.
    'nav.settings': '充值与支付', 'settings.topup': '充值设置', 'settings.topupEnabled': '开启充值',
    'settings.allowCustom': '允许自定义金额', 'settings.exchangeRate': '兑换比例(每元额度)',
    'settings.exchangeRateHint': '1000000 表示每支付 1 元得 1 元余额。', 'settings.presets': '快捷金额',
    'settings.presetAmount': '快捷金额 {n}:金额(元)', 'settings.presetBonus': '快捷金额 {n}:赠送额度',
    'settings.presetRemove': '删除快捷金额 {n}', 'settings.presetAdd': '添加快捷金额', 'settings.saved': '已保存。',
    'settings.presetCredit': '售价 ¥{price},到账 ¥{credit}', 'settings.presetFill': '快捷金额 {n}:按售价到账',
    'settings.warnPresetZero': '快捷金额 {n} 售价 ¥{price},到账 0。',
    'settings.warnPresetBelow': '快捷金额 {n} 售价 ¥{price},只到账 ¥{credit}。',
    'settings.warnRateOne': '兑换比例为 1:每支付 1 元只到账 1 额度(¥0.000001);1 元余额是 1000000 额度。',
    'settings.payment': '支付通道', 'settings.channelEnabled': '启用该通道',
    'settings.secretHint': '设置后显示为 ******;保持不变即保留已存的密钥。',
    'settings.pemHint': 'PEM 或纯 base64;设置后显示为 ******(保持不变即保留)。',
    'settings.pemFile': '从文件读取{field}', 'settings.noFile': '无',
    'settings.f_app_id': 'App ID', 'settings.f_mch_id': '商户号', 'settings.f_api_key': 'APIv2 密钥',
    'settings.f_notify_url': '回调地址', 'settings.f_gateway': '网关', 'settings.f_cert_file': '证书文件',
    'settings.f_key_file': '私钥文件', 'settings.f_private_key': '应用私钥', 'settings.f_public_key': '支付宝公钥',
    'settings.f_private_key_file': '私钥文件', 'settings.f_public_key_file': '公钥文件',
    'settings.f_account_name': '户名', 'settings.f_account_no': '账号', 'settings.f_bank_name': '开户行',
    'settings.f_branch': '支行', 'settings.f_notes': '付款说明',
    // Key rate limits (issue 13 §1).
    'keys.rpmLimit': '每分钟请求数', 'keys.tpmLimit': '每分钟 token 数', 'keys.concurrencyLimit': '并发请求数',
    'keys.rateLimitHint': '0 表示令牌本身不限制;所在分组的限制仍然生效。',
    'nav.options': '运行配置', 'options.key': '配置项', 'options.value': '值',
    'options.editKey': '编辑 {key}', 'options.saved': '{key} 已保存。',
    'topUsers.title': '范围内用量排行', 'topUsers.rank': '排名', 'topUsers.quota': '消耗', 'topUsers.plan': '当前套餐',
    // 图表、模型价格的缓存写入与分档、证书上传(issue 12)。
    'usage.metric': '图表', 'usage.quota': '费用', 'usage.requests': '请求数', 'usage.tokens': 'Token 数',
    'usage.perDay': '每日{metric}(UTC)', 'usage.perModel': '各模型{metric}', 'usage.model': '模型',
    'usage.others': '其他模型', 'usage.byDay': '按日(UTC)', 'usage.byModel': '按模型',
    'usage.summaryDays': '{from} 至 {to} 每日{metric}:合计 {total},最多的一天是 {peak}({peakValue})。下方表格列出全部数字。',
    'usage.summaryModels': '{n} 个模型的{metric}:最多的是 {top}({topValue})。下方表格列出全部数字。',
    'usage.summaryEmpty': '此期间没有{metric}。',
    'overview.usage': '全部用户的用量:{range}(UTC)',
    'prices.cacheWrite': '缓存写入 5 分钟(元 / 百万 Token)', 'prices.cacheWrite1h': '缓存写入 1 小时(元 / 百万 Token)',
    'prices.cacheWriteHint': '0 表示写入缓存的 Token 按输入价格计费。',
    'prices.tiers': '上下文分档', 'prices.tierAbove': '提示超过(Token)', 'prices.noTiers': '没有分档:上面的价格适用于所有提示。',
    'prices.tiersHint': '整个提示超过某档起点的调用,其所有部分都按最后一个满足条件的分档价格计费;起点从小到大,最多 8 档;缓存价格为 0 表示该档的输入价格。',
    'prices.tierAdd': '添加分档',
    'settings.uploadFile': '{field}:上传 PEM 文件', 'settings.storedFile': '已存文件',
    'nav.audit': '审计日志', 'audit.action': '操作', 'audit.target': '对象', 'audit.ip': '地址',
    'audit.detail': '详情', 'audit.show': '展开',
    'audit.hint': '本节点上每次成功的管理操作:谁、从哪里、做了什么,以及对象修改前后的内容。密钥、密码和机密已隐去。',
    'nav.adminLogs': '全部日志', 'alogs.username': '用户名', 'alogs.channel': '渠道 ID', 'alogs.status': 'HTTP 状态码',
    'alogs.errorCode': '错误码', 'alogs.keyword': '关键词', 'alogs.upstream': '上游返回',
    'alogs.keywordHint': '用户名、模型、令牌名称、详情或请求 ID 的一部分(日志多时较慢)。',
    'alogs.stat': '符合条件的消费日志:{requests} 次请求,{quota},Token 输入 {prompt} / 输出 {completion}。',
    // 渠道熔断(渠道页)。
    'breakers.tripped': '{n} 个模型已熔断', 'breakers.errors': '近期上游失败',
    'breakers.perNode': '熔断状态按节点保存:这里是应答本页的节点。',
    'breakers.state_closed': '正常', 'breakers.state_open': '熔断中', 'breakers.state_half_open': '探测中',
    'breakers.probeAt': '{time} 之后的第一个调用触发探测', 'breakers.window': '窗口内 {calls} 次调用失败 {failures} 次',
    'breakers.noAnswer': '无应答', 'breakers.probe': '探测',
  },
};

function initial() {
  const saved = localStorage.getItem(KEY);
  if (dict[saved]) return saved;
  return (navigator.language || '').toLowerCase().startsWith('zh') ? 'zh' : 'en';
}

let current = initial();
document.documentElement.lang = current === 'zh' ? 'zh-CN' : 'en';
const listeners = new Set();

export const lang = () => current;

export function setLang(l) {
  if (!dict[l] || l === current) return;
  current = l;
  localStorage.setItem(KEY, l);
  document.documentElement.lang = l === 'zh' ? 'zh-CN' : 'en';
  listeners.forEach((f) => f(l));
}

// onLangChange registers f and returns its removal.
export function onLangChange(f) {
  listeners.add(f);
  return () => listeners.delete(f);
}

// asked holds keys t was asked for that the current language lacks.
const asked = new Set();

// t is the label for key in the current language, with {name} replaced
// from vars. A missing key shows itself, so it is easy to spot.
export function t(key, vars) {
  if (!(key in dict[current])) asked.add(`${current}: ${key}`);
  let s = dict[current][key] ?? dict.en[key] ?? key;
  if (vars) for (const [k, v] of Object.entries(vars)) s = s.replaceAll(`{${k}}`, String(v));
  return s;
}

// missingLabels lists keys one language has and the other lacks, and
// keys a page asked for that are in neither (the browser tests call it).
export function missingLabels() {
  const out = [...asked];
  for (const [a, b] of [['en', 'zh'], ['zh', 'en']]) {
    for (const k of Object.keys(dict[a])) if (!(k in dict[b])) out.push(`${b}: ${k}`);
  }
  return out;
}
