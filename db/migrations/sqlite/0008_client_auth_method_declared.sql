-- Whether an OAuth client named its token_endpoint_auth_method at registration: one that did must use it at the
-- token and revocation endpoints. Existing clients count as undeclared, so each keeps working as before.
ALTER TABLE `oauth_clients` ADD `token_endpoint_auth_method_declared` integer DEFAULT false NOT NULL;