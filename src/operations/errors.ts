// The one error type of operator tasks (migrate, backup, restore): a refusal or failure whose message is fit to
// show an operator as it is, in one line.
export class OperationError extends Error {}
