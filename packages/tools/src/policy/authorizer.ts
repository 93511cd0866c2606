import { type Authorizer, type PermissionDecision, permission } from '../registry/authorization.js';

const ALLOW_ALL: PermissionDecision = permission('allow', 'allow-all');

/**
 * Allows every call (the read-only scope check still applies: it runs before any authorizer).
 * For tests and local experiments only: never for production.
 */
export class AllowAllAuthorizer implements Authorizer {
  /** Always returns the frozen `allow` decision with reason `allow-all`. */
  authorize(): PermissionDecision {
    return ALLOW_ALL;
  }

  /** Never asks. */
  mayAsk(): boolean {
    return false;
  }
}
