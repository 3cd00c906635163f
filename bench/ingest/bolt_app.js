// The Bolt for JavaScript peer of bench/ingest/run: the HTTP receiver with signature
// verification and a no-op `message` listener; it acks every event and stores nothing.
// Offline: no `token` (that would call auth.test on Slack); `authorize` supplies the identity.
// Env: SLACK_SIGNING_SECRET; PORT (0 = any free port). Prints `ready <port>` when listening.
const { App, LogLevel } = require('@slack/bolt');

const app = new App({
  signingSecret: process.env.SLACK_SIGNING_SECRET,
  authorize: async () => ({ botToken: 'xoxb-bench', botId: 'B0BENCHBOT', botUserId: 'U0BENCHBOT' }),
  logLevel: LogLevel.ERROR,
});

app.message(async () => {});

(async () => {
  const server = await app.start({ port: Number(process.env.PORT || 0), host: '127.0.0.1' });
  console.log(`ready ${server.address().port}`);
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
