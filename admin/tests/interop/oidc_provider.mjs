// A real OpenID provider for the single sign-on tests: the npm package `oidc-provider` (what
// scripts/test.sh installs beside the build), with its development login and consent pages, on a
// free port of 127.0.0.1. Whatever name is typed at its login page signs in; the account's groups
// come from GROUPS below and are released under the `groups` scope (in UserInfo, as the package
// does by default). PKCE is required, so a client that does not send it cannot sign in.
//
// Usage: node oidc_provider.mjs <oidc-provider package dir> <redirect URI> <client secret>
// Prints one line `{"issuer": "http://127.0.0.1:PORT"}` when it listens; stops when stdin closes.

import { createServer } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [packageDir, redirectUri, clientSecret] = process.argv.slice(2);
const { default: Provider } = await import(pathToFileURL(join(packageDir, 'lib', 'index.js')).href);

const GROUPS = {
  alice: ['jobwheel-admins', 'staff'],
  bob: ['team-billing', 'staff'],
  mallory: ['staff'],
};

const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'jobwheel',
    client_secret: clientSecret,
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  claims: {
    openid: ['sub'],
    profile: ['preferred_username', 'name'],
    email: ['email'],
    groups: ['groups'],
  },
  pkce: { required: () => true },
  cookies: { keys: ['jobwheel-test-cookie-key'] },
  features: { devInteractions: { enabled: true } },
  async findAccount(_ctx, id) {
    return {
      accountId: id,
      async claims() {
        return { sub: `sub-${id}`, preferred_username: id, name: id, email: `${id}@example.test`, groups: GROUPS[id] ?? [] };
      },
    };
  },
});
// Its own warnings (development keys and interactions) are expected here.
provider.on('server_error', (_ctx, error) => process.stderr.write(`oidc-provider: ${error.stack}\n`));
server.on('request', provider.callback());

process.stdout.write(`${JSON.stringify({ issuer })}\n`);
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
