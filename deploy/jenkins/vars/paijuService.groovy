// The pipeline of every service's Jenkins job, as a step of the shared library
// "paiju-pipeline" (deploy/jenkins/ of this repository, configured once in Jenkins: Manage
// Jenkins > System > Global Pipeline Libraries, name paiju-pipeline, default version main,
// "Allow default version to be overridden" off, library path deploy/jenkins/). A global
// library is always loaded from main, never from the branch or pull request being built, so
// a change cannot rewrite the steps that hold the registry and cluster credentials.
//
// services/<svc>/Jenkinsfile calls paijuService(service: '<svc>'). Each step is a make
// target, so a laptop runs the same commands. Agent needs: python3.11, make, git, docker with
// buildx; for Promote, kubectl. Jenkins provides PAIJU_REGISTRY (registry and path, e.g.
// registry.example.com/paiju), the username/password credential "paiju-registry" and the
// kubeconfig file credentials "paiju-kubeconfig-test" and "paiju-kubeconfig-prod".
//
//   Changes  make changed-<svc>: the build goes on only when an input of the image or of the
//            pipeline changed since the last successful build (pull requests: since the
//            target branch); otherwise the build ends NOT_BUILT.
//   Build    make build-<svc>: lint, compile, wheel.
//   Test     make test-<svc>: every test file covering what the image ships (deploy/inputs.py
//            tests; table and arbiter include the engines' tests); the JUnit report must exist.
//   Image    make image-<svc>: from the lock files and the base image by digest.
//   Push     main only: make push-<svc> (a tag is never pushed twice), the digest recorded in
//            dist/<svc>/image.txt and archived.
//   Promote  main only: make deploy ENV=test with this image's digest, then, once approved,
//            ENV=prod (migration Job first, then the rollout; deploy/promote.py).

def call(Map args) {
    String service = args.service
    properties([buildDiscarder(logRotator(numToKeepStr: '30')), disableConcurrentBuilds()])
    node('paiju-docker') {
        timeout(time: 90, unit: 'MINUTES') {
            timestamps {
                checkout scm
                withEnv(["SERVICE=${service}",
                         "PYTEST_ADDOPTS=--junitxml=reports/junit-${service}.xml"]) {
                    stages(service)
                }
            }
        }
    }
}

// Pushes and deployments happen only for the main branch itself, never for another branch
// or a pull request (CHANGE_ID is set for pull requests).
boolean onMain() {
    return env.BRANCH_NAME == 'main' && !env.CHANGE_ID
}

def stages(String service) {
    boolean changed = true
    stage('Changes') {
        String base = env.CHANGE_ID ? "origin/${env.CHANGE_TARGET}" : (env.GIT_PREVIOUS_SUCCESSFUL_COMMIT ?: '')
        withEnv(["BASE=${base}"]) {
            changed = sh(returnStatus: true, script: 'make "changed-$SERVICE" BASE="$BASE"') == 0
        }
        if (!changed) {
            currentBuild.result = 'NOT_BUILT'
            currentBuild.description = "no input of paiju-${service} changed"
        }
    }
    if (!changed) {
        return
    }
    stage('Build') {
        sh 'make "build-$SERVICE"'
    }
    stage('Test') {
        try {
            sh 'make "test-$SERVICE"'
        } finally {
            // a missing report fails the build: tests that did not run are not a pass
            junit allowEmptyResults: false, testResults: "reports/junit-${service}.xml"
        }
    }
    stage('Image') {
        if (!env.PAIJU_REGISTRY) {
            error("PAIJU_REGISTRY is not set: the registry of paiju-${service}")
        }
        sh 'make "image-$SERVICE" IMAGE_REGISTRY="$PAIJU_REGISTRY"'
    }
    if (!onMain()) {
        echo "not the main branch: paiju-${service} is built and tested, not pushed"
        return
    }
    stage('Push') {
        withCredentials([usernamePassword(credentialsId: 'paiju-registry',
                                          usernameVariable: 'REGISTRY_USER',
                                          passwordVariable: 'REGISTRY_PASSWORD')]) {
            sh '''
                set -eu
                trap 'docker logout "${PAIJU_REGISTRY%%/*}" || true' EXIT
                echo "$REGISTRY_PASSWORD" | docker login --username "$REGISTRY_USER" --password-stdin "${PAIJU_REGISTRY%%/*}"
                make "push-$SERVICE" IMAGE_REGISTRY="$PAIJU_REGISTRY"
            '''
        }
    }
    stage('Archive') {
        archiveArtifacts artifacts: "dist/${service}/**", fingerprint: true
    }
    stage('Promote') {
        promote(service, 'test')
        input message: "Promote paiju-${service} to prod?", ok: 'Deploy to prod'
        promote(service, 'prod')
    }
}

def promote(String service, String environment) {
    withCredentials([file(credentialsId: "paiju-kubeconfig-${environment}", variable: 'KUBECONFIG')]) {
        withEnv(["DEPLOY_ENV=${environment}"]) {
            sh 'make deploy ENV="$DEPLOY_ENV" IMAGES="$SERVICE=$(cat dist/$SERVICE/image.txt)"'
        }
    }
    archiveArtifacts artifacts: "build/release/${environment}/**", fingerprint: true
}
