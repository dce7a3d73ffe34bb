import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';

describe('configuration', () => {
  it('defaults to the embedded adapters on port 8080 with ./data', () => {
    const c = loadConfig({});
    expect(c.PORT).toBe(8080);
    expect(c.DATA_DIR).toBe('./data');
    expect(c.DATABASE_URL).toBeUndefined();
    expect(c.CLICKHOUSE_URL).toBeUndefined();
    expect(c.KAFKA_BROKERS).toBeUndefined();
    expect(c.REDIS_URL).toBeUndefined();
    expect(c.SMTP_URL).toBeUndefined();
    expect(c.BUS_NAME_SUFFIX).toBe('');
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', KAFKA_BROKERS: '' }).DATABASE_URL).toBeUndefined();
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://x'],
    ['CLICKHOUSE_URL', 'not a url'],
    ['KAFKA_BROKERS', 'kafka-1'],
    ['REDIS_URL', 'http://redis'],
    ['SMTP_URL', 'mailto:x'],
    ['LOG_LEVEL', 'loud'],
    ['TRUST_PROXY', 'maybe'],
    ['BUS_NAME_SUFFIX', '.with space'],
    ['BUS_NAME_SUFFIX', '/staging'],
  ])('refuses a bad %s and names it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(name));
  });

  it('parses broker lists and widget hosts', () => {
    const c = loadConfig({ KAFKA_BROKERS: 'k1:9092,k2:9092', WIDGET_HOSTS: 'Widgets.Example.com, w2.example.com' });
    expect(c.KAFKA_BROKERS).toBe('k1:9092,k2:9092');
    expect(c.WIDGET_HOSTS).toEqual(['widgets.example.com', 'w2.example.com']);
  });

  it('takes the GitHub App whole or not at all, its key with \\n escapes', () => {
    const app = {
      GITHUB_APP_ID: '123456',
      GITHUB_APP_PRIVATE_KEY: '-----BEGIN PRIVATE KEY-----\\nMIIE\\n-----END PRIVATE KEY-----',
      GITHUB_APP_CLIENT_ID: 'Iv23liAbc',
      GITHUB_APP_CLIENT_SECRET: 'secret',
    };
    expect(loadConfig(app).GITHUB_APP_PRIVATE_KEY).toBe('-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----');
    expect(loadConfig({}).GITHUB_API_URL).toBe('https://api.github.com');
    expect(() => loadConfig({ ...app, GITHUB_APP_CLIENT_SECRET: '' })).toThrow(/GITHUB_APP_CLIENT_SECRET/);
    expect(() => loadConfig({ ...app, GITHUB_APP_PRIVATE_KEY: 'not a key' })).toThrow(/GITHUB_APP_PRIVATE_KEY/);
  });
});
